// The ASO telemetry timeline of one optimize run: objective and worst
// constraint violation per step for every trajectory, with the directive's
// source (heuristic, LLM, human) marked on each point.
import type { EChartsCoreOption } from "echarts/core";
import type { TelemetryStep } from "../generated/TelemetryStep";

const SOURCE_SYMBOL: Record<string, string> = { heuristic: "circle", llm: "triangle", human: "diamond" };

export function telemetryOption(steps: TelemetryStep[]): EChartsCoreOption {
  const trajectories = [...new Set(steps.map((s) => s.trajectory_id))].sort((a, b) => a - b);
  const series = trajectories.flatMap((t) => {
    const own = steps.filter((s) => s.trajectory_id === t);
    const point = (s: TelemetryStep, y: number | null) => ({
      value: [s.step, y, s.directive_action, s.directive_source, s.status, s.evals_used],
      symbol: SOURCE_SYMBOL[s.directive_source] ?? "circle",
      symbolSize: s.llm_call_made ? 11 : 6,
    });
    return [
      { name: `objective · trajectory ${t}`, type: "line", yAxisIndex: 0, data: own.map((s) => point(s, s.objective)) },
      {
        name: `violation · trajectory ${t}`,
        type: "line",
        yAxisIndex: 1,
        lineStyle: { type: "dashed" },
        data: own.map((s) => point(s, s.max_violation !== null ? Math.max(s.max_violation, 1e-12) : null)),
      },
    ];
  });
  return {
    grid: { left: 64, right: 64, top: 72, bottom: 40 },
    legend: { top: 0, type: "scroll" },
    tooltip: {
      trigger: "item",
      formatter: (p: { seriesName: string; value: (number | string)[] }) =>
        `${p.seriesName}<br/>step ${p.value[0]} · ${p.value[5]} evaluations<br/>${p.value[4]}<br/>directive <b>${p.value[2]}</b> from ${p.value[3]}`,
    },
    // Steps, not evaluations, along x: a stalled trajectory spends no
    // evaluations, and its steps would otherwise pile onto one point.
    xAxis: { type: "value", name: "step", nameLocation: "middle", nameGap: 26, minInterval: 1 },
    yAxis: [
      { type: "value", name: "objective", scale: true },
      { type: "log", name: "max violation", logBase: 10 },
    ],
    dataZoom: [{ type: "inside" }],
    series,
  };
}
