// The convergence engine's trajectories of one agent run: the convergence
// level and the goal-gradient loss L per iteration, each point marked with the
// directive the engine drew from it, so a person can see where a trajectory
// stalled, cycled or broke out, and which strategy it tried next.
import type { EChartsCoreOption } from "echarts/core";
import type { IterationView } from "../generated/IterationView";
import type { TrajectoryView } from "../generated/TrajectoryView";
import { COLORS } from "./charts";

/** The point symbol of each goal-gradient directive. */
export const DIRECTIVE_SYMBOL: Record<string, string> = {
  refine: "circle",
  change_path: "triangle",
  change_approach: "diamond",
  break_symmetry: "rect",
  abandon: "pin",
};

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c] ?? c);
}

/** One tooltip: what was tried, what came of it, what the engine decided. */
export function iterationTooltip(o: IterationView): string {
  const lines = [
    `<b>iteration ${o.sequence + 1}</b> · ${esc(o.strategy)}${o.forced ? " (forced)" : ""}`,
    `level ${o.level.toFixed(3)}${o.delta === null ? "" : ` (Δ ${o.delta >= 0 ? "+" : ""}${o.delta.toFixed(3)})`}`,
    `L ${o.loss.toFixed(3)} = D ${o.loss_d.toFixed(2)} · P ${o.loss_p.toFixed(2)} · Ω ${o.loss_omega.toFixed(2)}; ∇L ${o.grad_l.toFixed(3)}`,
    `attractor ${esc(o.attractor)} (${Math.round(o.attractor_confidence * 100)}%)`,
    `directive <b>${esc(o.directive)}</b> → ${esc(o.loop_control)}${o.next_strategy ? `, next ${esc(o.next_strategy)}` : ""}`,
  ];
  if (o.verdict_summary) lines.push(`<i>${esc(o.verdict_summary.slice(0, 160))}</i>`);
  return lines.join("<br/>");
}

/** The baseline's tooltip: the untouched workspace, before any execution. */
export function baselineTooltip(b: IterationView): string {
  return [
    "<b>iteration 0</b> · baseline (the untouched workspace)",
    `level ${b.level.toFixed(3)}`,
    `<i>${esc(b.summary.slice(0, 160))}</i>`,
  ].join("<br/>");
}

export function trajectoryOption(t: TrajectoryView): EChartsCoreOption {
  // Executions are iterations 1, 2, …: iteration 0 is the baseline, the
  // untouched workspace, plotted on the level line as a hollow point (it has
  // no loss: nothing was executed).
  const point = (o: IterationView, y: number) => ({
    value: [o.sequence + 1, y],
    symbol: DIRECTIVE_SYMBOL[o.directive] ?? "circle",
    symbolSize: o.forced ? 11 : 8,
  });
  const obs = t.observations;
  const base = t.baseline ? [{ value: [0, t.baseline.level], symbol: "emptyCircle", symbolSize: 9 }] : [];
  const tip = (p: { dataIndex: number; seriesIndex: number }) => {
    const i = p.seriesIndex === 0 ? p.dataIndex - base.length : p.dataIndex;
    if (i < 0 && t.baseline) return baselineTooltip(t.baseline);
    return obs[i] ? iterationTooltip(obs[i]) : "";
  };
  return {
    grid: { left: 56, right: 56, top: 40, bottom: 40 },
    legend: { top: 0 },
    tooltip: { trigger: "item", formatter: tip },
    xAxis: { type: "value", name: "iteration", nameLocation: "middle", nameGap: 26, minInterval: 1 },
    yAxis: [
      { type: "value", name: "level", min: 0, max: 1 },
      { type: "value", name: "loss L", min: 0, scale: true },
    ],
    series: [
      {
        name: "convergence level",
        type: "line",
        yAxisIndex: 0,
        data: [...base, ...obs.map((o) => point(o, o.level))],
        itemStyle: { color: COLORS.update },
      },
      {
        name: "loss L",
        type: "line",
        yAxisIndex: 1,
        lineStyle: { type: "dashed" },
        data: obs.map((o) => point(o, o.loss)),
        itemStyle: { color: COLORS.rollback },
      },
    ],
  };
}

/** Iterations per strategy, most used first: the trajectory at a glance. */
export function strategyCounts(t: TrajectoryView): [string, number][] {
  const counts = new Map<string, number>();
  for (const o of t.observations) counts.set(o.strategy, (counts.get(o.strategy) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}
