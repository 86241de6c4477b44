// The Memory screen's data shaping: what the trajectory repository (seed 002
// §10.2) and the convergence memories (Part 8) say about past agent runs,
// turned into totals, table rows, a strategy × attractor matrix and two
// small ECharts options — all pure functions of the API's answers, so they
// are unit tested without a browser.
//
// Also the screen's address: `#/memory?category=C` filters by task category,
// and `trajectory=ID`, `run=N` or `task=TEXT` asks for similar trajectories.
import type { EChartsCoreOption } from "echarts/core";
import type { AttractorCount } from "../generated/AttractorCount";
import type { CategoryStats } from "../generated/CategoryStats";
import type { ComplexityStats } from "../generated/ComplexityStats";
import type { SimilarRequest } from "../generated/SimilarRequest";
import type { StrategyStats } from "../generated/StrategyStats";
import { COLORS } from "./charts";

/** The attractors in the order a person reads them: from "no pattern yet" to the traps. */
export const ATTRACTOR_ORDER = ["indeterminate", "fixed_point", "plateau", "limit_cycle", "divergent"];

/** One colour per attractor, shared by the chart and the memories' paths. */
export const ATTRACTOR_COLORS: Record<string, string> = {
  fixed_point: COLORS.update,
  plateau: COLORS.holdout,
  limit_cycle: COLORS.average,
  divergent: COLORS.rollback,
  indeterminate: COLORS.none,
};

/**
 * A text with `backquoted` parts split out, for showing them as code: the
 * odd-numbered pieces are code. An unpaired backquote stays as it is.
 */
export function codeSpans(text: string): string[] {
  const parts = text.split("`");
  if (parts.length % 2 === 0) return [text];
  return parts;
}

/** `fixed_point` → `fixed point`: identifiers as words. */
export function words(id: string): string {
  return id.replace(/_/g, " ");
}

/** A share in [0, 1] as a whole percentage; "–" for none. */
export function pct(x: number | null | undefined): string {
  return x === null || x === undefined || Number.isNaN(x) ? "–" : `${Math.round(x * 100)}%`;
}

/** A signed delta with three decimals (`+0.275`); "–" for none. */
export function signed(x: number | null | undefined): string {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  return `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(3)}`;
}

/** Every category's finished trajectories added up. */
export interface Totals {
  finished: number;
  converged: number;
  acceptedPartial: number;
  /** converged / finished; null without a finished trajectory. */
  rate: number | null;
  /** Weighted by each category's finished trajectories; null without any. */
  meanIterations: number | null;
  meanTokens: number | null;
}

export function totals(categories: CategoryStats[]): Totals {
  const finished = categories.reduce((n, c) => n + c.finished, 0);
  const weighted = (f: (c: CategoryStats) => number) =>
    finished ? categories.reduce((s, c) => s + f(c) * c.finished, 0) / finished : null;
  return {
    finished,
    converged: categories.reduce((n, c) => n + c.converged, 0),
    acceptedPartial: categories.reduce((n, c) => n + c.accepted_partial, 0),
    rate: finished ? categories.reduce((n, c) => n + c.converged, 0) / finished : null,
    meanIterations: weighted((c) => c.mean_iterations),
    meanTokens: weighted((c) => c.mean_tokens),
  };
}

/** Strategies most used first (ties by name): what the bandit leaned on. */
export function rankStrategies(rows: StrategyStats[]): StrategyStats[] {
  return [...rows].sort((a, b) => b.uses - a.uses || a.strategy.localeCompare(b.strategy));
}

/** Success rate per strategy (rows) and the attractor it was chosen under (columns). */
export interface StrategyMatrix {
  strategies: string[];
  attractors: string[];
  cell: (strategy: string, attractor: string) => StrategyStats | undefined;
}

export function strategyMatrix(byAttractor: StrategyStats[]): StrategyMatrix {
  const cells = new Map<string, StrategyStats>();
  const strategies = new Set<string>();
  const seen = new Set<string>();
  for (const r of byAttractor) {
    const a = r.attractor ?? "indeterminate";
    cells.set(`${r.strategy}\u0000${a}`, r);
    strategies.add(r.strategy);
    seen.add(a);
  }
  const known = ATTRACTOR_ORDER.filter((a) => seen.has(a));
  const other = [...seen].filter((a) => !ATTRACTOR_ORDER.includes(a)).sort();
  const uses = (s: string) => byAttractor.filter((r) => r.strategy === s).reduce((n, r) => n + r.uses, 0);
  return {
    strategies: [...strategies].sort((a, b) => uses(b) - uses(a) || a.localeCompare(b)),
    attractors: [...known, ...other],
    cell: (s, a) => cells.get(`${s}\u0000${a}`),
  };
}

/**
 * A cell's background for a success rate: red (0) through amber to green (1),
 * translucent so the text stays readable on light and dark surfaces; none
 * when nothing was measured.
 */
export function rateColor(rate: number | null | undefined): string | undefined {
  if (rate === null || rate === undefined || Number.isNaN(rate)) return undefined;
  const r = Math.min(1, Math.max(0, rate));
  return `hsla(${Math.round(r * 120)}, 65%, 45%, 0.28)`;
}

/** The structured part of a memory (the API sends it as it was stored). */
export interface MemoryDetails {
  complexity: string | null;
  strategies: string[];
  effective: string[];
  unproductive: string[];
  attractorPath: string[];
  escapes: { from: string; strategy: string; to: string }[];
  signals: string[];
  terminal: string | null;
  causes: string[];
  gaps: string[];
  blockedTools: string[];
  freshStarts: number;
}

/** Reads a memory's `details` defensively: a missing or odd field is empty, never a crash. */
export function memoryDetails(details: unknown): MemoryDetails {
  const d = details && typeof details === "object" && !Array.isArray(details) ? (details as Record<string, unknown>) : {};
  const list = (k: string) => (Array.isArray(d[k]) ? (d[k] as unknown[]).filter((x): x is string => typeof x === "string") : []);
  const text = (k: string) => (typeof d[k] === "string" ? (d[k] as string) : null);
  const escapes = Array.isArray(d.escapes)
    ? (d.escapes as unknown[]).flatMap((e) => {
        const x = e as Record<string, unknown> | null;
        return x && typeof x.from === "string" && typeof x.strategy === "string" && typeof x.to === "string"
          ? [{ from: x.from, strategy: x.strategy, to: x.to }]
          : [];
      })
    : [];
  return {
    complexity: text("complexity"),
    strategies: list("strategies"),
    effective: list("effective_strategies"),
    unproductive: list("unproductive_strategies"),
    attractorPath: list("attractor_path"),
    escapes,
    signals: list("decisive_signals"),
    terminal: text("terminal_attractor"),
    causes: list("failure_causes"),
    gaps: list("persistent_gaps"),
    blockedTools: list("blocked_tools"),
    freshStarts: typeof d.fresh_starts === "number" ? d.fresh_starts : 0,
  };
}

/** What the Memory screen's address asks for. */
export interface MemoryRoute {
  category?: string;
  trajectory?: string;
  run?: number;
  task?: string;
}

export function readMemoryRoute(q: URLSearchParams): MemoryRoute {
  const text = (k: string) => q.get(k)?.trim() || undefined;
  const run = Number(text("run"));
  return {
    category: text("category"),
    trajectory: text("trajectory"),
    run: Number.isInteger(run) && run > 0 ? run : undefined,
    task: text("task"),
  };
}

/** The hash of the Memory screen for `r` (fields left undefined are left out). */
export function memoryHash(r: MemoryRoute): string {
  const q = new URLSearchParams();
  if (r.category) q.set("category", r.category);
  if (r.trajectory) q.set("trajectory", r.trajectory);
  if (r.run !== undefined) q.set("run", String(r.run));
  if (r.task) q.set("task", r.task);
  const s = q.toString();
  return `#/memory${s ? `?${s}` : ""}`;
}

/**
 * The similarity question of a route: a trajectory, else a run, else a task
 * text (which the filtered category, if any, favours); null when it asks none.
 */
export function similarRequest(r: MemoryRoute, limit = 10): SimilarRequest | null {
  if (r.trajectory) return { trajectory_id: r.trajectory, limit };
  if (r.run !== undefined) return { run_id: r.run, limit };
  if (r.task) return { task: r.task, limit, ...(r.category ? { category: r.category } : {}) };
  return null;
}

const AXIS_LABEL = { hideOverlap: true };

/** Mean iterations to finish by complexity, each bar labelled with its trajectories. */
export function complexityOption(rows: ComplexityStats[]): EChartsCoreOption {
  return {
    animationDuration: 300,
    grid: { left: 48, right: 16, top: 36, bottom: 30 },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      formatter: (p: { dataIndex: number }[]) => {
        const c = rows[p[0]?.dataIndex ?? -1];
        if (!c) return "";
        return [
          `<b>${c.complexity}</b>`,
          `${c.trajectories} finished, ${c.converged} converged`,
          `mean ${c.mean_iterations.toFixed(1)} iterations, ${Math.round(c.mean_tokens)} tokens`,
        ].join("<br/>");
      },
    },
    xAxis: { type: "category", data: rows.map((c) => c.complexity), axisLabel: AXIS_LABEL },
    // Headroom above the tallest bar for its label.
    yAxis: { type: "value", name: "mean iterations", minInterval: 1, boundaryGap: [0, "25%"], nameTextStyle: { align: "left" } },
    series: [
      {
        name: "mean iterations",
        type: "bar",
        barMaxWidth: 48,
        color: COLORS.line,
        data: rows.map((c) => c.mean_iterations),
        label: {
          show: true,
          position: "top",
          formatter: (p: { dataIndex: number }) => {
            const c = rows[p.dataIndex];
            return c ? `${c.mean_iterations.toFixed(1)} (${c.trajectories} finished)` : "";
          },
        },
      },
    ],
  };
}

/** Where finished trajectories ended, and how often each attractor was met on the way. */
export function attractorOption(rows: AttractorCount[]): EChartsCoreOption {
  // Horizontal bars read top-down: the first row goes at the top.
  const shown = [...rows].reverse();
  return {
    animationDuration: 300,
    grid: { left: 100, right: 36, top: 30, bottom: 24 },
    legend: { top: 0, data: ["ended there", "met along the way"] },
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" } },
    xAxis: { type: "value", minInterval: 1 },
    yAxis: { type: "category", data: shown.map((a) => words(a.attractor)) },
    series: [
      {
        name: "ended there",
        type: "bar",
        barMaxWidth: 16,
        color: COLORS.line,
        label: { show: true, position: "right" },
        data: shown.map((a) => a.trajectories),
      },
      {
        name: "met along the way",
        type: "bar",
        barMaxWidth: 16,
        color: COLORS.none,
        itemStyle: { opacity: 0.55 },
        label: { show: true, position: "right" },
        data: shown.map((a) => a.observations),
      },
    ],
  };
}
