// Chart data shaping and ECharts options for the three analytics charts of
// seed 004 §11: LossCurve, ArtifactDeltaTimeline and PerTaskLossBoxplot, and
// the optimizer's calibration (predicted against observed loss reduction).
//
// Everything here is a pure function of the API's `EpochView`s, so it is unit
// tested without a browser, and the chart components only hand the result to
// ECharts. Options avoid per-point closures where ECharts offers data fields:
// with 500 epochs × 50 tasks the charts must stay responsive.
import type { EChartsCoreOption } from "echarts/core";
import type { ArtifactEvent } from "../generated/ArtifactEvent";
import type { EpochView } from "../generated/EpochView";
import type { ProposalItem } from "../generated/ProposalItem";
import { fmtLoss } from "./format";

export const COLORS = {
  update: "#2e9d4f",
  rollback: "#d64545",
  none: "#9aa0a6",
  line: "#3b6fd8",
  average: "#8a63d2",
  holdout: "#e08a1e",
};

/**
 * Trailing moving average over `window` points. The first points average what
 * exists so far; a missing value (an epoch without a loss) is skipped, and a
 * window with no values at all gives null.
 */
export function movingAverage(values: (number | null)[], window = 3): (number | null)[] {
  return values.map((_, i) => {
    const slice = values.slice(Math.max(0, i - window + 1), i + 1).filter((v): v is number => v !== null);
    return slice.length ? slice.reduce((a, b) => a + b, 0) / slice.length : null;
  });
}

/** What happened to the artifacts at the end of an epoch, for the dot colour. */
export function epochMove(events: ArtifactEvent[]): "update" | "rollback" | "none" {
  if (events.some((e) => e.type === "rollback")) return "rollback";
  if (events.some((e) => e.type === "update")) return "update";
  return "none";
}

/** `knobs v1→v2` for each event of an epoch. */
export function transitionLabels(events: ArtifactEvent[]): string[] {
  return events.map((e) => `${e.type} ${e.artifact} v${e.from_version}→v${e.to_version}`);
}

/** Median of a non-empty list. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export interface LossPoint {
  epoch: number;
  loss: number | null;
  average: number | null;
  holdout: number | null;
  move: "update" | "rollback" | "none";
  transitions: string[];
}

export function lossPoints(epochs: EpochView[]): LossPoint[] {
  const done = epochs.filter((e) => e.completed_at !== null);
  const avg = movingAverage(done.map((e) => e.mean_loss));
  return done.map((e, i) => ({
    epoch: e.epoch_num,
    loss: e.mean_loss,
    average: avg[i],
    holdout: e.holdout_mean_loss,
    move: epochMove(e.events),
    transitions: transitionLabels(e.events),
  }));
}

/** One left margin for all three charts, so their epoch columns line up. */
const GRID_LEFT = 130;

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

export function lossCurveOption(points: LossPoint[]): EChartsCoreOption {
  const hasHoldout = points.some((p) => p.holdout !== null);
  const many = points.length > 120;
  return {
    animation: !many,
    grid: { left: GRID_LEFT, right: 20, top: 36, bottom: points.length > 30 ? 56 : 32 },
    legend: { top: 0, data: ["mean loss", "3-epoch average", ...(hasHoldout ? ["held-out mean"] : [])] },
    tooltip: {
      trigger: "axis",
      // The formatter reads the points by index: no per-point closures.
      formatter: (params: { dataIndex: number }[]) => {
        const p = points[params[0]?.dataIndex ?? 0];
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
    xAxis: { type: "category", name: "epoch", nameLocation: "middle", nameGap: 24, data: points.map((p) => p.epoch) },
    yAxis: { type: "value", name: "loss", scale: true },
    dataZoom: zoom(points.length),
    series: [
      {
        name: "mean loss",
        type: "line",
        color: COLORS.line,
        symbol: "circle",
        showAllSymbol: true,
        symbolSize: many ? 4 : 10,
        data: points.map((p) => ({ value: p.loss, itemStyle: { color: COLORS[p.move] } })),
      },
      {
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

export interface TimelineMark {
  epoch: number;
  artifact: string;
  row: number;
  type: "update" | "rollback";
  from: number;
  to: number;
}

/** One mark per artifact event; rows are the artifacts that ever moved (all of `artifacts` when none did). */
export function timelineMarks(epochs: EpochView[], artifacts: string[]): { rows: string[]; marks: TimelineMark[] } {
  const moved = new Set(epochs.flatMap((e) => e.events.map((ev) => ev.artifact)));
  const rows = artifacts.filter((a) => moved.has(a));
  for (const a of moved) if (!rows.includes(a)) rows.push(a);
  const marks: TimelineMark[] = [];
  for (const e of epochs) {
    for (const ev of e.events) {
      marks.push({
        epoch: e.epoch_num,
        artifact: ev.artifact,
        row: rows.indexOf(ev.artifact),
        type: ev.type,
        from: ev.from_version,
        to: ev.to_version,
      });
    }
  }
  return { rows, marks };
}

/** A filled × (ECharts fills symbol paths, so the cross is drawn as a shape). */
const CROSS = "path://M3,0 L10,7 L17,0 L20,3 L13,10 L20,17 L17,20 L10,13 L3,20 L0,17 L7,10 L0,3 Z";

/**
 * Epochs run along a category axis, as in the other two charts, so a marker
 * sits straight below the loss-curve dot of the same epoch. A mark's value is
 * [epoch index, row, from, to, artifact, epoch].
 */
export function timelineOption(rows: string[], marks: TimelineMark[], epochNums: number[]): EChartsCoreOption {
  const column = new Map(epochNums.map((n, i) => [n, i]));
  const toData = (type: "update" | "rollback") =>
    marks
      .filter((m) => m.type === type && column.has(m.epoch))
      .map((m) => [column.get(m.epoch), m.row, m.from, m.to, m.artifact, m.epoch]);
  return {
    animation: epochNums.length <= 120,
    grid: { left: GRID_LEFT, right: 20, top: 30, bottom: epochNums.length > 30 ? 56 : 32 },
    legend: { top: 0, data: ["update", "rollback"] },
    tooltip: {
      trigger: "item",
      formatter: (p: { seriesName: string; value: (number | string)[] }) =>
        `<b>epoch ${p.value[5]}</b><br/>${p.seriesName} ${p.value[4]} v${p.value[2]}→v${p.value[3]}<br/><i>click for the diff</i>`,
    },
    xAxis: { type: "category", name: "epoch", nameLocation: "middle", nameGap: 24, data: epochNums, splitLine: { show: true } },
    yAxis: { type: "category", data: rows, inverse: true, axisLabel: { width: GRID_LEFT - 16, overflow: "truncate" } },
    dataZoom: zoom(epochNums.length),
    series: [
      { name: "update", type: "scatter", symbol: "circle", symbolSize: 14, color: COLORS.update, data: toData("update"), cursor: "pointer" },
      { name: "rollback", type: "scatter", symbol: CROSS, symbolSize: 14, color: COLORS.rollback, data: toData("rollback"), cursor: "pointer" },
    ],
  };
}

export interface SpreadPoint {
  epoch: number;
  min: number;
  max: number;
  median: number;
  /** Training tasks, sorted by loss. */
  tasks: { task: string; loss: number }[];
  /** Held-out tasks: shown apart, never part of the bar. */
  holdout: { task: string; loss: number }[];
}

export function spreadPoints(epochs: EpochView[]): SpreadPoint[] {
  const out: SpreadPoint[] = [];
  for (const e of epochs) {
    const train = e.tasks.filter((t) => !t.holdout).map((t) => ({ task: t.task, loss: t.loss }));
    const held = e.tasks.filter((t) => t.holdout).map((t) => ({ task: t.task, loss: t.loss }));
    if (!train.length && !held.length) continue;
    const base = train.length ? train : held;
    const losses = base.map((t) => t.loss);
    out.push({
      epoch: e.epoch_num,
      min: Math.min(...losses),
      max: Math.max(...losses),
      median: median(losses),
      tasks: [...train].sort((a, b) => a.loss - b.loss),
      holdout: held,
    });
  }
  return out;
}

function spreadTooltip(p: SpreadPoint): string {
  const row = (t: { task: string; loss: number }, held = false) =>
    `${t.task}${held ? " <i>(held out)</i>" : ""}: ${fmtLoss(t.loss)}`;
  const shown = p.tasks.length > 25 ? [...p.tasks.slice(0, 12), null, ...p.tasks.slice(-12)] : p.tasks;
  return [
    `<b>epoch ${p.epoch}</b> — median ${fmtLoss(p.median)}, range ${fmtLoss(p.min)}–${fmtLoss(p.max)}`,
    ...shown.map((t) => (t ? row(t) : `… ${p.tasks.length - 24} more …`)),
    ...p.holdout.map((t) => row(t, true)),
  ].join("<br/>");
}

export function boxplotOption(points: SpreadPoint[]): EChartsCoreOption {
  const hasHoldout = points.some((p) => p.holdout.length);
  const many = points.length > 120;
  return {
    animation: !many,
    grid: { left: GRID_LEFT, right: 20, top: 36, bottom: points.length > 30 ? 56 : 32 },
    legend: { top: 0, data: ["task range", "median", ...(hasHoldout ? ["held-out task"] : [])] },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: (params: { dataIndex: number }[]) => {
        const p = points[params[0]?.dataIndex ?? 0];
        return p ? spreadTooltip(p) : "";
      },
    },
    xAxis: { type: "category", name: "epoch", nameLocation: "middle", nameGap: 24, data: points.map((p) => p.epoch) },
    yAxis: { type: "value", name: "loss", scale: true },
    dataZoom: zoom(points.length),
    series: [
      {
        // A stacked pair draws the min–max bar: an invisible bar up to min,
        // then a visible one of height max − min.
        name: "floor",
        type: "bar",
        stack: "range",
        silent: true,
        itemStyle: { color: "transparent" },
        data: points.map((p) => p.min),
        barMaxWidth: 14,
      },
      {
        name: "task range",
        type: "bar",
        stack: "range",
        color: "rgba(59, 111, 216, 0.35)",
        data: points.map((p) => p.max - p.min),
        barMaxWidth: 14,
        barMinHeight: 2,
      },
      {
        name: "median",
        type: "scatter",
        color: COLORS.line,
        symbolSize: many ? 4 : 9,
        data: points.map((p) => p.median),
      },
      ...(hasHoldout
        ? [
            {
              name: "held-out task",
              type: "scatter",
              color: COLORS.holdout,
              symbol: "diamond",
              symbolSize: many ? 4 : 9,
              itemStyle: { borderColor: COLORS.holdout, color: "transparent", borderWidth: 2 },
              data: points.flatMap((p, i) => p.holdout.map((t) => [i, t.loss])),
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
 * Predicted against observed loss reduction, one dot per applied proposal
 * (red when it was rolled back), with the diagonal where a perfectly
 * calibrated optimizer would put every dot.
 */
export function calibrationOption(points: CalibrationPoint[]): EChartsCoreOption {
  const values = points.flatMap((p) => [p.predicted, p.observed]);
  const lo = Math.min(0, ...values);
  const hi = Math.max(0.01, ...values);
  const dot = (p: CalibrationPoint) => [p.predicted, p.observed, p.epoch, p.artifact];
  return {
    grid: { left: GRID_LEFT, right: 20, top: 36, bottom: 40 },
    legend: { top: 0, data: ["kept", "rolled back", "predicted = observed"] },
    tooltip: {
      trigger: "item",
      formatter: (p: { seriesType: string; value: [number, number, number, string] }) =>
        p.seriesType === "line" ? "" :
        `epoch ${p.value[2]} · ${p.value[3]}<br/>predicted ${fmtSigned(p.value[0])}<br/>observed ${fmtSigned(p.value[1])}`,
    },
    xAxis: { type: "value", name: "predicted reduction", nameLocation: "middle", nameGap: 26, min: lo, max: hi },
    yAxis: { type: "value", name: "observed reduction", min: lo, max: hi },
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
