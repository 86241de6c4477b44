// The Memory screen's helpers (totals, the strategy matrix, a memory's
// structure read defensively, the address) and the screen itself against a
// mocked facade: its numbers, its empty state, and errors shown in place.
import { cleanup, fireEvent, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { CategoryStats } from "../generated/CategoryStats";
import type { MemoryItem } from "../generated/MemoryItem";
import type { StrategyStats } from "../generated/StrategyStats";
import type { TrajectoryStats } from "../generated/TrajectoryStats";
import {
  attractorOption,
  codeSpans,
  complexityOption,
  memoryDetails,
  memoryHash,
  pct,
  rankStrategies,
  rateColor,
  readMemoryRoute,
  signed,
  similarRequest,
  strategyMatrix,
  totals,
} from "../lib/memory";

const api = vi.hoisted(() => ({ trajectory_stats: vi.fn(), memories: vi.fn(), similar_trajectories: vi.fn() }));
vi.mock("../api", () => ({ api, inDesktopApp: () => false }));
import { Memory } from "../screens/Memory";
import { renderWithQueries as render } from "./render";

afterEach(cleanup);

function category(over: Partial<CategoryStats>): CategoryStats {
  return { category: "c", finished: 0, converged: 0, accepted_partial: 0, convergence_rate: 0, mean_iterations: 0, mean_tokens: 0, ...over };
}

function strategy(over: Partial<StrategyStats>): StrategyStats {
  return { strategy: "s", attractor: null, uses: 0, measured: 0, successes: 0, success_rate: null, mean_delta: null, tokens: 0, ...over };
}

const parsers = category({ category: "parsers", finished: 2, converged: 1, convergence_rate: 0.5, mean_iterations: 3, mean_tokens: 350 });
const charts = category({ category: "charts", finished: 1, converged: 1, convergence_rate: 1, mean_iterations: 3, mean_tokens: 150 });

describe("totals", () => {
  it("add the categories up and weight the means by finished trajectories", () => {
    const t = totals([parsers, charts, category({ category: "x", finished: 1, accepted_partial: 1, mean_iterations: 7, mean_tokens: 50 })]);
    expect(t).toEqual({ finished: 4, converged: 2, acceptedPartial: 1, rate: 0.5, meanIterations: 4, meanTokens: (700 + 150 + 50) / 4 });
  });
  it("have no rate or means without a finished trajectory", () => {
    expect(totals([])).toEqual({ finished: 0, converged: 0, acceptedPartial: 0, rate: null, meanIterations: null, meanTokens: null });
  });
});

describe("formatting", () => {
  it("writes shares as percentages and deltas with a sign", () => {
    expect([pct(2 / 3), pct(0), pct(null), pct(Number.NaN)]).toEqual(["67%", "0%", "–", "–"]);
    expect([signed(0.2749), signed(-0.1), signed(0), signed(null)]).toEqual(["+0.275", "−0.100", "+0.000", "–"]);
  });
  it("splits backquoted names out of a text, leaving an unpaired backquote alone", () => {
    expect(codeSpans("`check` passed after fresh_start")).toEqual(["", "check", " passed after fresh_start"]);
    expect(codeSpans("test `a`; test `b`")).toEqual(["test ", "a", "; test ", "b", ""]);
    expect(codeSpans("it's `odd")).toEqual(["it's `odd"]);
  });
  it("colours a rate from red to green and leaves the unmeasured plain", () => {
    expect(rateColor(0)).toBe("hsla(0, 65%, 45%, 0.28)");
    expect(rateColor(1)).toBe("hsla(120, 65%, 45%, 0.28)");
    expect(rateColor(7)).toBe(rateColor(1));
    expect(rateColor(null)).toBeUndefined();
  });
});

describe("strategies", () => {
  it("rank by uses, then by name", () => {
    const rows = [strategy({ strategy: "reframe", uses: 2 }), strategy({ strategy: "retry", uses: 5 }), strategy({ strategy: "focus", uses: 2 })];
    expect(rankStrategies(rows).map((s) => s.strategy)).toEqual(["retry", "focus", "reframe"]);
  });
  it("lay out per attractor: attractors in reading order, strategies by their uses, gaps empty", () => {
    const m = strategyMatrix([
      strategy({ strategy: "focus", attractor: "plateau", uses: 1, measured: 1, success_rate: 0 }),
      strategy({ strategy: "focus", attractor: "indeterminate", uses: 2, measured: 2, successes: 2, success_rate: 1 }),
      strategy({ strategy: "retry", attractor: "indeterminate", uses: 5 }),
      strategy({ strategy: "retry", attractor: "strange", uses: 1 }),
    ]);
    expect(m.attractors).toEqual(["indeterminate", "plateau", "strange"]);
    expect(m.strategies).toEqual(["retry", "focus"]);
    expect(m.cell("focus", "indeterminate")?.successes).toBe(2);
    expect(m.cell("retry", "plateau")).toBeUndefined();
  });
});

describe("memoryDetails", () => {
  it("reads the stored structure", () => {
    const d = memoryDetails({
      complexity: "simple",
      strategies: ["retry_with_feedback", "fresh_start"],
      effective_strategies: ["fresh_start"],
      attractor_path: ["indeterminate", "plateau"],
      escapes: [{ from: "plateau", strategy: "fresh_start", to: "indeterminate" }],
      decisive_signals: ["tests 0→1 of 1"],
      terminal_attractor: "fixed_point",
      failure_causes: [],
      persistent_gaps: [],
      blocked_tools: ["regex"],
      fresh_starts: 1,
    });
    expect(d.effective).toEqual(["fresh_start"]);
    expect(d.escapes).toEqual([{ from: "plateau", strategy: "fresh_start", to: "indeterminate" }]);
    expect([d.terminal, d.complexity, d.freshStarts]).toEqual(["fixed_point", "simple", 1]);
    expect(d.blockedTools).toEqual(["regex"]);
  });
  it("turns anything odd into empty fields instead of failing", () => {
    for (const odd of [null, "text", 3, [], { strategies: "retry", escapes: [{ from: 1 }, null], attractor_path: [1, "plateau"] }]) {
      const d = memoryDetails(odd);
      expect(d.strategies).toEqual([]);
      expect(d.escapes).toEqual([]);
      expect(d.terminal).toBeNull();
    }
    expect(memoryDetails({ attractor_path: [1, "plateau"] }).attractorPath).toEqual(["plateau"]);
  });
});

describe("the address", () => {
  it("round-trips a filter and a question", () => {
    const r = { category: "text files", trajectory: "run-3" };
    expect(memoryHash(r)).toBe("#/memory?category=text+files&trajectory=run-3");
    expect(readMemoryRoute(new URLSearchParams(memoryHash(r).split("?")[1]))).toEqual({ ...r, run: undefined, task: undefined });
    expect(memoryHash({})).toBe("#/memory");
  });
  it("ignores blanks and a run that is not a positive whole number", () => {
    expect(readMemoryRoute(new URLSearchParams("category=%20&run=x&task=%20"))).toEqual({
      category: undefined,
      trajectory: undefined,
      run: undefined,
      task: undefined,
    });
    expect(readMemoryRoute(new URLSearchParams("run=12")).run).toBe(12);
    expect(readMemoryRoute(new URLSearchParams("run=-1")).run).toBeUndefined();
  });
  it("asks about a trajectory before a run before a text, and favours the filter's category only for a text", () => {
    expect(similarRequest({ trajectory: "t", run: 3, task: "x", category: "c" })).toEqual({ trajectory_id: "t", limit: 10 });
    expect(similarRequest({ run: 3, task: "x", category: "c" })).toEqual({ run_id: 3, limit: 10 });
    expect(similarRequest({ task: "x", category: "c" })).toEqual({ task: "x", limit: 10, category: "c" });
    expect(similarRequest({ task: "x" })).toEqual({ task: "x", limit: 10 });
    expect(similarRequest({ category: "c" })).toBeNull();
  });
});

describe("chart options", () => {
  it("bar the mean iterations per complexity and label each with its count", () => {
    const o = complexityOption([
      { complexity: "simple", trajectories: 4, mean_iterations: 1.25, mean_tokens: 150, converged: 4 },
      { complexity: "moderate", trajectories: 1, mean_iterations: 3, mean_tokens: 300, converged: 0 },
    ]) as { xAxis: { data: string[] }; series: { data: number[]; label: { formatter: (p: { dataIndex: number }) => string } }[] };
    expect(o.xAxis.data).toEqual(["simple", "moderate"]);
    expect(o.series[0].data).toEqual([1.25, 3]);
    expect(o.series[0].label.formatter({ dataIndex: 0 })).toBe("1.3 (4 finished)");
  });
  it("put the most frequent ending attractor on top", () => {
    const o = attractorOption([
      { attractor: "fixed_point", trajectories: 5, observations: 9 },
      { attractor: "plateau", trajectories: 1, observations: 4 },
    ]) as { yAxis: { data: string[] }; series: { name: string; data: number[] }[] };
    // ECharts draws a category axis bottom-up.
    expect(o.yAxis.data).toEqual(["plateau", "fixed point"]);
    expect(o.series.map((s) => [s.name, s.data])).toEqual([
      ["ended there", [1, 5]],
      ["met along the way", [4, 9]],
    ]);
  });
});

const stats: TrajectoryStats = {
  category: null,
  success_threshold: 0.05,
  by_complexity: [],
  strategies: [strategy({ strategy: "focused_repair", uses: 3, measured: 3, successes: 2, success_rate: 2 / 3, mean_delta: 0.27, tokens: 350 })],
  strategies_by_attractor: [],
  attractors: [],
  categories: [charts, parsers],
};

const memory: MemoryItem = {
  id: 1,
  trajectory_id: "run-4",
  run_id: 4,
  category: "parsers",
  outcome: "failure",
  task_name: "hex",
  status: "exhausted",
  iterations: 4,
  tokens_used: 400,
  final_level: 0.5,
  relevance: 0.9,
  content: "Task type 'parsers' failed to converge after 4 iterations.",
  details: { strategies: ["retry_with_feedback", "reframe"], attractor_path: ["indeterminate", "plateau"], failure_causes: ["the budget ran out"] },
  created_at: "2026-01-01T00:00:00Z",
};

describe("the Memory screen", () => {
  beforeEach(() => {
    for (const f of Object.values(api)) f.mockReset();
    window.location.hash = "#/memory";
  });

  it("says what fills it when no agent run has finished", async () => {
    api.trajectory_stats.mockResolvedValue({ ...stats, strategies: [], categories: [] });
    api.memories.mockResolvedValue([]);
    render(<Memory query={new URLSearchParams()} />);
    const empty = await screen.findByTestId("empty");
    expect(empty.textContent).toMatch(/Nothing remembered yet/);
    expect(empty.textContent).toMatch(/attractor run examples\/agent\.suite\.yaml/);
    expect(screen.queryByTestId("memory-summary")).toBeNull();
  });

  it("shows the numbers and the memories, and filters by category through the address", async () => {
    api.trajectory_stats.mockResolvedValue(stats);
    api.memories.mockResolvedValue([memory]);
    render(<Memory query={new URLSearchParams()} />);
    const summary = await screen.findByTestId("memory-summary");
    expect(summary.querySelector("[data-stat=finished]")?.textContent).toMatch(/3$/);
    expect(summary.querySelector("[data-stat=converged]")?.textContent).toMatch(/2 \(67%\)/);
    const row = screen.getByTestId("strategy-table").querySelector("[data-strategy=focused_repair]")!;
    expect(row.textContent).toMatch(/67%2\/3/);
    const m = await screen.findByTestId("memory");
    expect(m.textContent).toMatch(/retry with feedback → reframe/);
    expect(within(m).getByText("hex").closest("a")?.getAttribute("href")).toBe("#/runs/run/4");
    expect(within(m).getByTestId("memory-similar").getAttribute("href")).toBe("#/memory?trajectory=run-4");
    expect(api.memories).toHaveBeenCalledWith({ category: undefined, limit: 50 });

    fireEvent.click(within(screen.getByTestId("category-table")).getByText("parsers"));
    expect(window.location.hash).toBe("#/memory?category=parsers");
  });

  it("shows a failed request in place", async () => {
    api.trajectory_stats.mockRejectedValue(new Error("cannot reach the Attractor server"));
    api.memories.mockResolvedValue([]);
    api.similar_trajectories.mockRejectedValue(new Error("there is no trajectory `nope`"));
    render(<Memory query={new URLSearchParams("trajectory=nope")} />);
    await waitFor(() => expect(screen.getAllByRole("alert").map((a) => a.textContent)).toEqual([
      "cannot reach the Attractor server",
      "there is no trajectory `nope`",
    ]));
    expect(api.similar_trajectories).toHaveBeenCalledWith({ request: { trajectory_id: "nope", limit: 10 } });
  });
});
