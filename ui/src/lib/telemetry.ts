// The ASO telemetry timeline of one run: objective and worst constraint
// violation of every trajectory's steps, with the directive's source
// (heuristic, LLM, human, the engine's own ending) marked on each point, and
// the problem's known optimum as a reference line when there is one. For an
// agent run under `supervision: aso` the objective is the distance D to the
// intent and a violation is a check's share of failing criteria (0–1, often
// exactly 0: a linear axis, not a log one).
//
// Readability at scale: a run of many one-step trajectories used to stack
// them all in one column (x was the trajectory's own step) under a legend of
// two entries per trajectory. Now x is the step's place in the run — in the
// order the steps were recorded — so trajectories line up as they happened,
// each keeps its colour, and the legend has just the two quantities.
import type { EChartsCoreOption } from "echarts/core";
import type { TelemetryStep } from "../generated/TelemetryStep";
import { fmtTick } from "./format";

const SOURCE_SYMBOL: Record<string, string> = {
  heuristic: "circle",
  fallback: "emptyCircle",
  llm: "triangle",
  human: "diamond",
  convergence: "rect",
};

/** One colour per trajectory, repeating after ten. */
const PALETTE = ["#3b6fd8", "#e08a1e", "#2e9d4f", "#8a63d2", "#d64545", "#1b9aaa", "#b5651d", "#6b7280", "#c2185b", "#7cb342"];

/** What the axes are called for a run of this task kind. */
export function telemetryLabels(kind: string) {
  const agent = kind === "agent";
  return {
    agent,
    objective: agent ? "distance D" : "objective",
    violation: agent ? "worst check failing" : "max violation",
    evals: agent ? "iterations" : "evaluations",
  };
}

/**
 * The chart's option. `reference` is the problem's known optimum (a numeric
 * run's result carries it for the bundled problems), drawn as a dashed line.
 */
export function telemetryOption(steps: TelemetryStep[], kind = "optimize", reference: number | null = null): EChartsCoreOption {
  const labels = telemetryLabels(kind);
  // The step's place in the run: the order the rows were recorded in.
  const place = new Map(steps.map((s, i) => [s, i + 1]));
  const trajectories = [...new Set(steps.map((s) => s.trajectory_id))].sort((a, b) => a - b);
  const series = trajectories.flatMap((t, k) => {
    const own = steps.filter((s) => s.trajectory_id === t);
    const color = PALETTE[k % PALETTE.length];
    const point = (s: TelemetryStep, y: number | null) => ({
      value: [place.get(s) ?? 0, y, s.directive_action, s.directive_source, s.status, s.evals_used, t, s.step],
      symbol: SOURCE_SYMBOL[s.directive_source] ?? "circle",
      symbolSize: s.llm_call_made ? 11 : 6,
    });
    const violation = (v: number | null) => (v === null ? null : labels.agent ? v : Math.max(v, 1e-12));
    return [
      {
        // Series of one quantity share a name: one legend entry toggles them all.
        name: labels.objective,
        type: "line",
        color,
        yAxisIndex: 0,
        data: own.map((s) => point(s, s.objective)),
        ...(k === 0 && reference !== null && Number.isFinite(reference)
          ? {
              markLine: {
                silent: true,
                symbol: "none",
                lineStyle: { type: "dashed", color: "#6b7280" },
                label: { formatter: `known optimum ${fmtTick(reference)}`, position: "insideEndTop" },
                data: [{ yAxis: reference }],
              },
            }
          : {}),
      },
      {
        name: labels.violation,
        type: "line",
        color,
        yAxisIndex: 1,
        lineStyle: { type: "dashed", opacity: 0.6 },
        data: own.map((s) => point(s, violation(s.max_violation))),
      },
    ];
  });
  return {
    grid: { left: 72, right: 72, top: 48, bottom: 40 },
    legend: { top: 0, data: [labels.objective, labels.violation] },
    tooltip: {
      trigger: "item",
      formatter: (p: { seriesName: string; value: (number | string | null)[] }) => {
        const [, y, action, source, status, evals, t, step] = p.value;
        const shown = typeof y === "number" ? fmtTick(y) : "–";
        return `trajectory ${t}, its step ${step}<br/>${p.seriesName} ${shown}<br/>${evals} ${labels.evals} · ${status}<br/>directive <b>${action}</b> from ${source}`;
      },
    },
    // One step past the last keeps the latest points off the grid's edge.
    xAxis: {
      type: "value",
      name: "step of the run",
      nameLocation: "middle",
      nameGap: 26,
      minInterval: 1,
      min: 0,
      max: (v: { max: number }) => v.max + 1,
    },
    yAxis: [
      {
        type: "value",
        name: labels.objective,
        scale: !labels.agent,
        min: labels.agent ? 0 : undefined,
        axisLabel: { formatter: fmtTick },
      },
      labels.agent
        ? { type: "value", name: labels.violation, min: 0, max: 1 }
        : { type: "log", name: labels.violation, logBase: 10, axisLabel: { formatter: fmtTick } },
    ],
    dataZoom: [{ type: "inside" }],
    series,
  };
}

/** The known optimum a numeric run's result names (`reference`), if any. */
export function referenceOf(result: unknown): number | null {
  if (result && typeof result === "object" && "reference" in result) {
    const r = (result as { reference: unknown }).reference;
    return typeof r === "number" && Number.isFinite(r) ? r : null;
  }
  return null;
}
