import { describe, expect, it } from "vitest";
import type { GraphNode } from "../generated/GraphNode";
import type { NodeStatus } from "../generated/NodeStatus";
import type { SuiteGraph } from "../generated/SuiteGraph";
import type { TrajectoryView } from "../generated/TrajectoryView";
import type { IterationView } from "../generated/IterationView";
import { STATUS_COLORS, chainOption, nodeDetail, nodeLabel, noteKind, notesByRound, treeData, treeDepth, treeLeaves } from "../lib/graph";
import { iterationTooltip, strategyCounts, trajectoryOption } from "../lib/trajectory";

function node(id: number, parent: number | null, status: NodeStatus, mean: number | null, losses: Record<string, number>, best = false): GraphNode {
  return {
    id: `node-${id}`,
    epoch_num: mean === null ? null : id,
    mean_loss: mean,
    holdout_mean_loss: null,
    label: "",
    artifacts: {},
    tree: {
      node_id: id,
      parent_id: parent,
      status,
      changed_artifact: parent === null ? null : "knobs",
      from_version: parent === null ? null : 0,
      to_version: parent === null || status === "rejected" ? null : id,
      brief: parent === null ? null : "push the gain up",
      note: null,
      round: parent === null ? null : 1,
      rationale: null,
      guidance: null,
      evaluations: mean === null ? 0 : 1,
      task_losses: losses,
      best,
    },
  };
}

const tree: SuiteGraph = {
  suite: "knobs",
  kind: "tree",
  nodes: [
    node(1, null, "committed", 0.5, { a: 0.4, b: 0.6 }),
    node(2, 1, "committed", 0.3, { a: 0.2, b: 0.4 }, true),
    node(3, 1, "discarded", 0.7, { a: 0.8, b: 0.6 }),
    node(4, 2, "rejected", null, {}),
    // Its parent is gone (a hand-edited database): it must still show.
    node(9, 42, "discarded", 0.9, { a: 0.9 }),
  ],
  edges: [],
  notes: [
    { round: 1, source: "analyst", kind: "dead_direction", artifact: "knobs", parent_id: 1, text: "three children of #1 regressed", expected_loss_reduction: null, confidence: null, node_id: null },
    { round: 2, source: "ideation", kind: "frontier_extrapolation", artifact: "knobs", parent_id: 2, text: "push further", expected_loss_reduction: 0.1, confidence: 0.5, node_id: 4 },
    { round: 2, source: "analyst", kind: "saturated_axis", artifact: "knobs", parent_id: null, text: "gain saturates", expected_loss_reduction: null, confidence: null, node_id: null },
  ],
};

describe("treeData", () => {
  it("nests children under their parents and keeps an orphan as a root", () => {
    const data = treeData(tree);
    expect(data.map((d) => d.name)).toEqual(["node-1", "node-9"]);
    expect(data[0].children.map((c) => c.name)).toEqual(["node-2", "node-3"]);
    expect(data[0].children[0].children.map((c) => c.name)).toEqual(["node-4"]);
    expect(treeDepth(data)).toBe(3);
    expect(treeLeaves(data)).toBe(3);
  });
  it("colours nodes by verdict and rings the best one", () => {
    const [root] = treeData(tree);
    const [best, discarded] = root.children;
    expect(discarded.itemStyle.color).toBe(STATUS_COLORS.discarded);
    expect(best.children[0].itemStyle.color).toBe(STATUS_COLORS.rejected);
    expect(best.itemStyle.borderWidth).toBeGreaterThan(root.itemStyle.borderWidth);
    expect(best.label.formatter).toBe("#2 0.3000 ★");
    expect(nodeLabel(tree.nodes[3])).toBe("#4 –");
  });
  it("survives a parent cycle in corrupt data", () => {
    const cyclic: SuiteGraph = { ...tree, notes: [], nodes: [node(1, 2, "committed", 0.5, {}), node(2, 1, "committed", 0.4, {})] };
    // Neither has a real root: the first becomes one and each is drawn once.
    const data = treeData(cyclic);
    expect(data.map((d) => d.name)).toEqual(["node-1"]);
    expect(data[0].children.map((c) => c.name)).toEqual(["node-2"]);
    expect(data[0].children[0].children).toEqual([]);
  });
});

describe("nodeDetail", () => {
  it("compares a node's task losses with its parent's and offers the diff it wrote", () => {
    const d = nodeDetail(tree, "node-2")!;
    expect(d.parent?.id).toBe("node-1");
    expect(d.tasks.map((t) => [t.task, t.loss, t.parent])).toEqual([
      ["a", 0.2, 0.4],
      ["b", 0.4, 0.6],
    ]);
    expect(d.tasks[0].delta).toBeCloseTo(-0.2);
    expect(d.transition).toEqual({ artifact: "knobs", from: 0, to: 2 });
  });
  it("has no diff for a rejected child and no parent for the root", () => {
    expect(nodeDetail(tree, "node-4")!.transition).toBeNull();
    const root = nodeDetail(tree, "node-1")!;
    expect(root.parent).toBeNull();
    expect(root.tasks.every((t) => t.delta === null)).toBe(true);
    expect(nodeDetail(tree, "node-77")).toBeNull();
  });
});

describe("notesByRound", () => {
  it("groups the search's notes by round, newest first, in the order they were made", () => {
    const rounds = notesByRound(tree);
    expect(rounds.map(([r, ns]) => [r, ns.map((n) => n.kind)])).toEqual([
      [2, ["frontier_extrapolation", "saturated_axis"]],
      [1, ["dead_direction"]],
    ]);
    expect(noteKind("dead_direction")).toBe("dead direction");
  });
});

describe("chainOption", () => {
  it("draws one node per epoch and colours an edge by the move it made", () => {
    const chain: SuiteGraph = {
      suite: "s",
      kind: "epochs",
      notes: [],
      nodes: [1, 2, 3].map((e) => ({ id: `epoch-${e}`, epoch_num: e, mean_loss: 1 / e, holdout_mean_loss: null, label: "", artifacts: {}, tree: null })),
      edges: [
        { source: "epoch-1", target: "epoch-2", label: "update k v0→v1", events: [{ type: "update", artifact: "k", from_version: 0, to_version: 1, reason: null, at: "" } as never] },
        { source: "epoch-2", target: "epoch-3", label: "", events: [] },
      ],
    };
    const o = chainOption(chain) as { series: { data: { value: number[] }[]; links: { lineStyle: { color: string } }[] }[] };
    expect(o.series[0].data.map((d) => d.value)).toEqual([
      [1, 1],
      [2, 0.5],
      [3, 1 / 3],
    ]);
    expect(o.series[0].links.map((l) => l.lineStyle.color)).toEqual(["#2e9d4f", "#9aa0a6"]);
  });

  it("draws an epoch without a mean (cancelled) hollow at the loss before it, not at 0", () => {
    const chain: SuiteGraph = {
      suite: "s",
      kind: "epochs",
      notes: [],
      nodes: [
        { id: "epoch-1", epoch_num: 1, mean_loss: 0.4, holdout_mean_loss: null, label: "", artifacts: {}, tree: null },
        { id: "epoch-2", epoch_num: 2, mean_loss: null, holdout_mean_loss: null, label: "", artifacts: {}, tree: null },
      ],
      edges: [{ source: "epoch-1", target: "epoch-2", label: "update k v0→v1", events: [{ type: "update" } as never] }],
    };
    const o = chainOption(chain) as {
      series: { data: { value: number[]; itemStyle: { color: string }; label: { formatter: string } }[]; links: { lineStyle: { type?: string } }[] }[];
    };
    const [, cancelled] = o.series[0].data;
    expect(cancelled.value).toEqual([2, 0.4]);
    expect(cancelled.itemStyle.color).toBe("transparent");
    expect(cancelled.label.formatter).toBe("2\nnot measured");
    expect(o.series[0].links[0].lineStyle.type).toBe("dashed");
  });
});

function it_(sequence: number, strategy: string, directive: string, level: number): IterationView {
  return {
    sequence,
    strategy,
    forced: directive === "break_symmetry",
    attractor: "plateau",
    attractor_confidence: 0.8,
    level,
    delta: sequence === 0 ? null : 0.1,
    loss: 1 - level,
    loss_d: 1 - level,
    loss_p: 0.5,
    loss_omega: 0.1,
    grad_l: -0.05,
    directive,
    rationale: "",
    loop_control: "continue",
    next_strategy: "focused_repair",
    tokens: 100,
    wall_time_ms: 10,
    files_changed: 1,
    lines_changed: 2,
    applied_edits: 1,
    rejected_edits: 0,
    commit_id: "0123456789abcdef0123456789abcdef01234567",
    summary: "",
    verdict_summary: "3 of 10 tests pass <script>",
  };
}

describe("trajectory", () => {
  const t: TrajectoryView = {
    id: "run-1",
    parent_id: null,
    role: "root",
    ordinal: 0,
    task_name: "squares",
    category: "general",
    status: "converged",
    iterations: 3,
    tokens_used: 300,
    final_level: 1,
    best_sequence: 2,
    pending_intervention_id: null,
    started_at: "",
    finished_at: null,
    baseline: null,
    observations: [it_(0, "focused_repair", "refine", 0.3), it_(1, "reframe", "break_symmetry", 0.5), it_(2, "focused_repair", "refine", 1)],
  };
  it("plots level and loss per iteration with the directive as the symbol", () => {
    const o = trajectoryOption(t) as { series: { data: { value: number[]; symbol: string; symbolSize: number }[] }[] };
    // Executions from iteration 1 (iteration 0 is the baseline).
    expect(o.series[0].data.map((d) => d.value)).toEqual([
      [1, 0.3],
      [2, 0.5],
      [3, 1],
    ]);
    expect(o.series[1].data[1].value[1]).toBeCloseTo(0.5);
    expect(o.series[0].data.map((d) => d.symbol)).toEqual(["circle", "rect", "circle"]);
    expect(o.series[0].data[1].symbolSize).toBeGreaterThan(o.series[0].data[0].symbolSize);
  });
  it("plots the baseline as iteration 0 on the level line, with its own tooltip", () => {
    const withBase = { ...t, baseline: { ...it_(-1, "baseline", "none", 0.25), summary: "5 tests at baseline; targets: the 2 tests failing at baseline" } };
    const o = trajectoryOption(withBase) as {
      series: { data: { value: number[]; symbol: string }[] }[];
      tooltip: { formatter: (p: { dataIndex: number; seriesIndex: number }) => string };
    };
    expect(o.series[0].data.map((d) => d.value)).toEqual([
      [0, 0.25],
      [1, 0.3],
      [2, 0.5],
      [3, 1],
    ]);
    expect(o.series[0].data[0].symbol).toBe("emptyCircle");
    // The loss line starts at iteration 1: the baseline executed nothing.
    expect(o.series[1].data.map((d) => d.value[0])).toEqual([1, 2, 3]);
    expect(o.tooltip.formatter({ dataIndex: 0, seriesIndex: 0 })).toContain("baseline");
    expect(o.tooltip.formatter({ dataIndex: 1, seriesIndex: 0 })).toContain("iteration 1");
    expect(o.tooltip.formatter({ dataIndex: 0, seriesIndex: 1 })).toContain("iteration 1");
  });
  it("counts strategies and escapes model text in the tooltip", () => {
    expect(strategyCounts(t)).toEqual([
      ["focused_repair", 2],
      ["reframe", 1],
    ]);
    const tip = iterationTooltip(t.observations[1]);
    expect(tip).toContain("break_symmetry");
    expect(tip).toContain("&lt;script&gt;");
    expect(tip).not.toContain("<script>");
  });
});
