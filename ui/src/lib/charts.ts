// ECharts options for the three analytics charts of seed 004 §11 —
// LossCurve, ArtifactDeltaTimeline and PerTaskLossBoxplot — and the
// optimizer's calibration (predicted against observed loss reduction).
//
// The data is shaped once, on the Rust side (`report::shape`, served as
// `SuiteCharts`; the exported report draws the same points): this file only
// styles it. The three charts share one category axis, the finished epochs,
// so a column index means the same epoch in all of them. Options avoid
// per-point closures where ECharts offers data fields: with 500 epochs × 50
// tasks the charts must stay responsive.
import type { EChartsCoreOption } from "echarts/core";
import type { ProposalItem } from "../generated/ProposalItem";
import type { LossPoint } from "../generated/LossPoint";
import type { SpreadPoint } from "../generated/SpreadPoint";
import type { SuiteCharts } from "../generated/SuiteCharts";
import { fmtLoss, fmtTick } from "./format";
import { niceExtent } from "./sketch";

export const COLORS = {
  update: "#2e9d4f",
  rollback: "#d64545",
  none: "#9aa0a6",
  line: "#3b6fd8",
  average: "#8a63d2",
  holdout: "#e08a1e",
};

/** One left margin for all three charts, so their epoch columns line up. */
const GRID_LEFT = 130;

/**
 * A grid with fixed margins. ECharts 6 would otherwise lay every grid out
 * twice to fit its axis labels in (`outerBounds`), measuring each label —
 * a sixth of a first draw — and could shift one chart's columns off the
 * others'.
 */
function grid(top: number, bottom: number) {
  return { left: GRID_LEFT, right: 20, top, bottom, outerBoundsMode: "none" };
}

/** Epochs shown at first in a long history: the latest ones (zoom out to see all). */
export const INITIAL_WINDOW = 100;

/**
 * Zoom for a history of `n` epochs: wheel and drag inside the chart, plus a
 * slider once there are more than 30; past 150 the view opens on the latest
 * {@link INITIAL_WINDOW} epochs, which keeps a 500-epoch chart readable.
 */
export function zoom(n: number) {
  const start = n > 150 ? 100 * (1 - INITIAL_WINDOW / n) : 0;
  return n > 30
    ? [
        { type: "inside", start, end: 100 },
        { type: "slider", height: 18, bottom: 4, start, end: 100 },
      ]
    : [{ type: "inside" }];
}

/** The shared epoch axis. */
function epochAxis(c: SuiteCharts, extra: Record<string, unknown> = {}) {
  return { type: "category", name: "epoch", nameLocation: "middle", nameGap: 24, data: c.epochs, ...extra };
}

/**
 * The top of a loss axis: a loss with the default weights is at most 1, so
 * an axis over losses near 1 is capped there (ECharts' rounding drew it to
 * 1.4). Small losses keep the automatic top, which follows them (capping
 * 0.01–0.03 at 1 would flatten the curve); so does a suite whose weights
 * add up to more than 1.
 */
export function lossAxisMax(extent: { min: number; max: number }): number | null {
  return extent.max > 0.75 && extent.max <= 1 ? 1 : null;
}

/** A loss axis whose labels carry the digits that matter, never 17 of them. */
const lossAxis = { type: "value", name: "loss", scale: true, max: lossAxisMax, axisLabel: { formatter: fmtTick } };

/** The column an axis tooltip is about (the axis value is the epoch's index). */
function columnOf(params: { dataIndex: number; axisIndex?: number; seriesIndex?: number }[]): number {
  return params[0]?.dataIndex ?? 0;
}

/** A long history (more than 120 epochs) is drawn without entry animation and with small symbols. */
const isLong = (history: number) => history > 120;

export function lossCurveOption(c: SuiteCharts): EChartsCoreOption {
  const history = c.epochs.length;
  const points = c.loss;
  const hasHoldout = points.some((p) => p.holdout !== null);
  const many = isLong(history);
  return {
    animation: !many,
    grid: grid(36, points.length > 30 ? 56 : 32),
    legend: { top: 0, data: ["mean loss", "3-epoch average", ...(hasHoldout ? ["held-out mean"] : [])] },
    tooltip: {
      trigger: "axis",
      className: "chart-tip",
      // The formatter reads the points by column: no per-point closures.
      formatter: (params: { dataIndex: number }[]) => {
        const p = points[columnOf(params)];
        if (!p) return "";
        const lines = [
          `<b>epoch ${p.epoch}</b>`,
          `mean loss ${fmtLoss(p.loss)}`,
          `3-epoch average ${fmtLoss(p.average)}`,
          ...(p.holdout !== null ? [`held-out mean ${fmtLoss(p.holdout)}`] : []),
          ...(p.transitions.length ? p.transitions : ["no artifact change"]),
        ];
        return lines.join("<br/>");
      },
    },
    xAxis: epochAxis(c),
    yAxis: lossAxis,
    dataZoom: zoom(points.length),
    series: [
      {
        id: "mean loss",
        name: "mean loss",
        type: "line",
        color: COLORS.line,
        symbol: "circle",
        showAllSymbol: true,
        symbolSize: many ? 4 : 10,
        data: points.map((p) => ({ value: p.loss, itemStyle: { color: COLORS[p.movement] } })),
      },
      {
        id: "3-epoch average",
        name: "3-epoch average",
        type: "line",
        color: COLORS.average,
        symbol: "none",
        lineStyle: { type: "dashed", width: 2 },
        data: points.map((p) => p.average),
      },
      ...(hasHoldout
        ? [
            {
              id: "held-out mean",
              name: "held-out mean",
              type: "line",
              color: COLORS.holdout,
              symbol: "diamond",
              symbolSize: many ? 4 : 8,
              lineStyle: { type: "dotted", width: 2 },
              data: points.map((p) => p.holdout),
            },
          ]
        : []),
    ],
  };
}

/** A filled × (ECharts fills symbol paths, so the cross is drawn as a shape). */
const CROSS = "path://M3,0 L10,7 L17,0 L20,3 L13,10 L20,17 L17,20 L10,13 L3,20 L0,17 L7,10 L0,3 Z";

/**
 * Epochs run along the shared category axis, so a marker sits straight below
 * the loss-curve dot of the same epoch. A mark's value is [column, row, index
 * of the mark in `c.marks`].
 */
export function timelineOption(c: SuiteCharts): EChartsCoreOption {
  const history = c.epochs.length;
  const toData = (rollback: boolean) =>
    c.marks.flatMap((m, i) => (m.rollback === rollback && m.column >= 0 ? [[m.column, m.row, i]] : []));
  return {
    animation: !isLong(history),
    grid: grid(30, c.epochs.length > 30 ? 56 : 32),
    legend: { top: 0, data: ["update", "rollback"] },
    tooltip: {
      trigger: "item",
      className: "chart-tip",
      formatter: (p: { value: number[] }) => {
        const m = c.marks[p.value[2]];
        return m ? `<b>epoch ${m.epoch}</b><br/>${m.label}<br/><i>click for the diff</i>` : "";
      },
    },
    xAxis: epochAxis(c, { splitLine: { show: true } }),
    yAxis: { type: "category", data: c.rows, inverse: true, axisLabel: { width: GRID_LEFT - 16, overflow: "truncate" } },
    dataZoom: zoom(c.epochs.length),
    series: [
      { id: "update", name: "update", type: "scatter", symbol: "circle", symbolSize: 14, color: COLORS.update, data: toData(false), cursor: "pointer" },
      { id: "rollback", name: "rollback", type: "scatter", symbol: CROSS, symbolSize: 14, color: COLORS.rollback, data: toData(true), cursor: "pointer" },
    ],
  };
}

/**
 * Where the timeline's tooltip goes when another chart of the group points at
 * `column`: the first mark of that epoch, or nowhere.
 */
export function timelineTipAt(c: SuiteCharts, column: number): { seriesIndex: number; dataIndex: number } | null {
  for (const [seriesIndex, rollback] of [[0, false], [1, true]] as const) {
    const inSeries = c.marks.filter((m) => m.rollback === rollback && m.column >= 0);
    const dataIndex = inSeries.findIndex((m) => m.column === column);
    if (dataIndex >= 0) return { seriesIndex, dataIndex };
  }
  return null;
}

function spreadTooltip(c: SuiteCharts, p: SpreadPoint): string {
  const name = (i: number) => c.tasks[i] ?? `task ${i}`;
  const row = ([t, loss]: [number, number], held = false) => `${name(t)}${held ? " <i>(held out)</i>" : ""}: ${fmtLoss(loss)}`;
  const shown = p.tasks.length > 25 ? [...p.tasks.slice(0, 12), null, ...p.tasks.slice(-12)] : p.tasks;
  return [
    `<b>epoch ${p.epoch}</b> — median ${fmtLoss(p.median)}, middle half ${fmtLoss(p.q1)}–${fmtLoss(p.q3)}, range ${fmtLoss(p.min)}–${fmtLoss(p.max)}`,
    ...shown.map((t) => (t ? row(t) : `… ${p.tasks.length - 24} more …`)),
    ...p.holdout.map((t) => row(t, true)),
  ].join("<br/>");
}

/**
 * The per-task loss: a box plot per epoch (whiskers at the lowest and highest
 * task, the box over the middle half, a line at the median) of the training
 * tasks, with held-out tasks as diamonds beside it.
 */
export function boxplotOption(c: SuiteCharts): EChartsCoreOption {
  const history = c.epochs.length;
  const hasHoldout = c.spread.some((p) => p?.holdout.length);
  const many = isLong(history);
  return {
    animation: !many,
    grid: grid(36, c.epochs.length > 30 ? 56 : 32),
    legend: { top: 0, data: ["tasks", ...(hasHoldout ? ["held-out task"] : [])] },
    tooltip: {
      trigger: "axis",
      className: "chart-tip",
      axisPointer: { type: "shadow" },
      formatter: (params: { dataIndex: number }[]) => {
        const p = c.spread[columnOf(params)];
        return p ? spreadTooltip(c, p) : "";
      },
    },
    xAxis: epochAxis(c),
    yAxis: lossAxis,
    dataZoom: zoom(c.epochs.length),
    series: [
      {
        id: "tasks",
        name: "tasks",
        type: "boxplot",
        color: COLORS.line,
        itemStyle: { color: "rgba(59, 111, 216, 0.25)", borderColor: COLORS.line, borderWidth: 1.5 },
        boxWidth: [4, 14],
        // An epoch that counted no task is a gap, not a shifted column.
        data: c.spread.map((p) => (p ? [p.min, p.q1, p.median, p.q3, p.max] : ["-", "-", "-", "-", "-"])),
      },
      ...(hasHoldout
        ? [
            {
              id: "held-out task",
              name: "held-out task",
              type: "scatter",
              color: COLORS.holdout,
              symbol: "diamond",
              symbolSize: many ? 4 : 9,
              // Beside the box, not on it.
              symbolOffset: [many ? 0 : 12, 0],
              itemStyle: { borderColor: COLORS.holdout, color: "transparent", borderWidth: 2 },
              // Not part of the axis tooltip's lookup: the box series' index is the column.
              tooltip: { show: false },
              data: c.spread.flatMap((p, i) => (p ? p.holdout.map(([, loss]) => [i, loss]) : [])),
            },
          ]
        : []),
    ],
  };
}

/** An applied proposal whose effect is known: predicted against observed. */
export type CalibrationPoint = { epoch: number; artifact: string; predicted: number; observed: number; rolledBack: boolean };

/**
 * The winners whose next epoch has closed, as predicted/observed pairs. A
 * proposal without a predicted reduction (evolve makes none) is left out:
 * there is nothing to calibrate.
 */
export function calibrationPoints(proposals: ProposalItem[]): CalibrationPoint[] {
  return proposals
    .filter((p) => p.outcome === "winner" && p.expected_loss_reduction !== null && p.observed_loss_reduction !== null)
    .map((p) => ({
      epoch: p.epoch_num,
      artifact: p.artifact,
      predicted: p.expected_loss_reduction as number,
      observed: p.observed_loss_reduction as number,
      rolledBack: p.rolled_back,
    }));
}

/**
 * The calibration chart's one range for both axes — so the diagonal is at
 * 45° — from 0 and every value, its ends rounded out to a step of the
 * axes' ticks: labels like -0.06 and 0.06, never the 17 digits of the
 * lowest value.
 */
export function calibrationRange(values: number[]): { lo: number; hi: number; step: number } {
  const { lo, hi, step } = niceExtent(Math.min(0, ...values), Math.max(0.01, ...values));
  return { lo, hi, step };
}

/**
 * Predicted against observed loss reduction, one dot per applied proposal
 * (red when it was rolled back), with the diagonal where a perfectly
 * calibrated optimizer would put every dot.
 */
export function calibrationOption(points: CalibrationPoint[]): EChartsCoreOption {
  const { lo, hi, step } = calibrationRange(points.flatMap((p) => [p.predicted, p.observed]));
  const dot = (p: CalibrationPoint) => [p.predicted, p.observed, p.epoch, p.artifact];
  // Along the grid's edges, not through zero (ECharts' default), where the
  // labels would sit apart from their line; the names beside, clear of the legend.
  const axis = (name: string, gap: number) => ({
    type: "value",
    name,
    nameLocation: "middle",
    nameGap: gap,
    min: lo,
    max: hi,
    interval: step,
    axisLine: { onZero: false },
    axisLabel: { formatter: fmtTick },
  });
  return {
    grid: grid(36, 48),
    legend: { top: 0, data: ["kept", "rolled back", "predicted = observed"] },
    tooltip: {
      trigger: "item",
      formatter: (p: { seriesType: string; value: [number, number, number, string] }) =>
        p.seriesType === "line" ? "" :
        `epoch ${p.value[2]} · ${p.value[3]}<br/>predicted ${fmtSigned(p.value[0])}<br/>observed ${fmtSigned(p.value[1])}`,
    },
    xAxis: axis("predicted reduction", 28),
    yAxis: axis("observed reduction", 56),
    series: [
      {
        name: "kept",
        type: "scatter",
        color: COLORS.update,
        symbolSize: 10,
        data: points.filter((p) => !p.rolledBack).map(dot),
      },
      { name: "rolled back", type: "scatter", color: COLORS.rollback, symbolSize: 10, data: points.filter((p) => p.rolledBack).map(dot) },
      {
        // Where a perfectly calibrated optimizer would put every dot.
        name: "predicted = observed",
        type: "line",
        silent: true,
        symbol: "none",
        color: COLORS.none,
        lineStyle: { type: "dashed", color: COLORS.none, width: 1 },
        data: [
          [lo, lo],
          [hi, hi],
        ],
      },
    ],
  };
}

function fmtSigned(v: number): string {
  return `${v >= 0 ? "+" : ""}${v.toFixed(4)}`;
}

/** The loss curve in a sentence: where it started, where it is, its best. */
export function lossSummary(loss: LossPoint[]): string {
  const measured = loss.filter((p) => p.loss !== null);
  if (measured.length === 0) return "Mean loss by epoch: no epoch measured yet";
  const first = measured[0];
  const last = measured[measured.length - 1];
  const best = measured.reduce((b, p) => ((p.loss ?? Infinity) < (b.loss ?? Infinity) ? p : b));
  return (
    `Mean loss by epoch, ${loss.length} epoch${loss.length === 1 ? "" : "s"}: ${fmtLoss(first.loss)} at epoch ${first.epoch}, ` +
    `${fmtLoss(last.loss)} at epoch ${last.epoch}, lowest ${fmtLoss(best.loss)} at epoch ${best.epoch}`
  );
}
