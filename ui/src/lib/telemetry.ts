// The ASO telemetry timeline of one run: objective and worst constraint
// violation per step for every trajectory, with the directive's source
// (heuristic, LLM, human, the engine's own ending) marked on each point. For
// an agent run under `supervision: aso` the objective is the distance D to
// the intent and a violation is a check's share of failing criteria (0–1,
// often exactly 0: a linear axis, not a log one).
import type { EChartsCoreOption } from "echarts/core";
import type { TelemetryStep } from "../generated/TelemetryStep";

const SOURCE_SYMBOL: Record<string, string> = {
  heuristic: "circle",
  fallback: "emptyCircle",
  llm: "triangle",
  human: "diamond",
  convergence: "rect",
};

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

export function telemetryOption(steps: TelemetryStep[], kind = "optimize"): EChartsCoreOption {
  const labels = telemetryLabels(kind);
  const trajectories = [...new Set(steps.map((s) => s.trajectory_id))].sort((a, b) => a - b);
  const series = trajectories.flatMap((t) => {
    const own = steps.filter((s) => s.trajectory_id === t);
    const point = (s: TelemetryStep, y: number | null) => ({
      value: [s.step, y, s.directive_action, s.directive_source, s.status, s.evals_used],
      symbol: SOURCE_SYMBOL[s.directive_source] ?? "circle",
      symbolSize: s.llm_call_made ? 11 : 6,
    });
    const violation = (v: number | null) => (v === null ? null : labels.agent ? v : Math.max(v, 1e-12));
    return [
      {
        name: `${labels.objective} · trajectory ${t}`,
        type: "line",
        yAxisIndex: 0,
        data: own.map((s) => point(s, s.objective)),
      },
      {
        name: `violation · trajectory ${t}`,
        type: "line",
        yAxisIndex: 1,
        lineStyle: { type: "dashed" },
        data: own.map((s) => point(s, violation(s.max_violation))),
      },
    ];
  });
  return {
    grid: { left: 64, right: 64, top: 72, bottom: 40 },
    legend: { top: 0, type: "scroll" },
    tooltip: {
      trigger: "item",
      formatter: (p: { seriesName: string; value: (number | string)[] }) =>
        `${p.seriesName}<br/>step ${p.value[0]} · ${p.value[5]} ${labels.evals}<br/>${p.value[4]}<br/>directive <b>${p.value[2]}</b> from ${p.value[3]}`,
    },
    // Steps, not evaluations, along x: a stalled trajectory spends no
    // evaluations, and its steps would otherwise pile onto one point.
    // One step past the last keeps the latest points off the grid's edge,
    // where a run of one or two steps would hide them.
    xAxis: {
      type: "value",
      name: "step",
      nameLocation: "middle",
      nameGap: 26,
      minInterval: 1,
      min: 0,
      max: (v: { max: number }) => v.max + 1,
    },
    yAxis: [
      { type: "value", name: labels.objective, scale: !labels.agent, min: labels.agent ? 0 : undefined },
      labels.agent
        ? { type: "value", name: labels.violation, min: 0, max: 1 }
        : { type: "log", name: labels.violation, logBase: 10 },
    ],
    dataZoom: [{ type: "inside" }],
    series,
  };
}
