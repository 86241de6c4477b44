// The suite's Graph view (seed 004 §11): for a suite grown with `--optimizer
// tree`, the experiment tree — every node a set of artifact versions with its
// measured losses, coloured by what the search decided about it; otherwise the
// chain of epochs, each step labelled with the artifact moves between them.
//
// Pure shaping of the API's `SuiteGraph`, unit tested without a browser; the
// screen hands the options to ECharts and shows the clicked node's details.
import type { EChartsCoreOption } from "echarts/core";
import type { GraphNode } from "../generated/GraphNode";
import type { NodeStatus } from "../generated/NodeStatus";
import type { SuiteGraph } from "../generated/SuiteGraph";
import type { TreeNoteView } from "../generated/TreeNoteView";
import { COLORS } from "./charts";
import { counted, fmtLoss } from "./format";

/** Node colour by the search's verdict (every status has one: the type says so). */
export const STATUS_COLORS: Record<NodeStatus, string> = {
  committed: COLORS.update,
  discarded: COLORS.none,
  rejected: COLORS.rollback,
  pruned: COLORS.holdout,
};

export interface TreeDatum {
  /** The graph node id (`node-7`), so a click finds its node. */
  name: string;
  value: number | null;
  label: { formatter: string };
  itemStyle: { color: string; borderColor: string; borderWidth: number };
  symbolSize: number;
  children: TreeDatum[];
}

/** `#7 0.412` (and a star on the best node). */
export function nodeLabel(n: GraphNode): string {
  const id = n.tree ? `#${n.tree.node_id}` : n.id;
  const star = n.tree?.best ? " ★" : "";
  return `${id} ${n.mean_loss === null ? "–" : fmtLoss(n.mean_loss)}${star}`;
}

/**
 * The experiment tree as ECharts tree data: one root per parentless node
 * (normally one), children in the order they were made. A node whose parent
 * is missing (a hand-edited database) becomes a root rather than vanishing.
 */
export function treeData(graph: SuiteGraph): TreeDatum[] {
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const kids = new Map<string, GraphNode[]>();
  const roots: GraphNode[] = [];
  for (const n of graph.nodes) {
    const parent = n.tree?.parent_id;
    const key = parent === null || parent === undefined ? null : `node-${parent}`;
    if (key && byId.has(key)) kids.set(key, [...(kids.get(key) ?? []), n]);
    else roots.push(n);
  }
  const build = (n: GraphNode, seen: Set<string>): TreeDatum => {
    seen.add(n.id);
    const status = n.tree?.status ?? "committed";
    const best = n.tree?.best ?? false;
    return {
      name: n.id,
      value: n.mean_loss,
      label: { formatter: nodeLabel(n) },
      itemStyle: {
        color: STATUS_COLORS[status] ?? COLORS.none,
        borderColor: best ? "#f5c518" : STATUS_COLORS[status] ?? COLORS.none,
        borderWidth: best ? 3 : 1,
      },
      symbolSize: best ? 16 : 11,
      // `seen` guards against a cycle in corrupt data.
      children: (kids.get(n.id) ?? []).filter((c) => !seen.has(c.id)).map((c) => build(c, seen)),
    };
  };
  const seen = new Set<string>();
  const out = roots.map((r) => build(r, seen));
  // Nodes on a parent cycle (corrupt data) have no root above them: draw them anyway.
  for (const n of graph.nodes) if (!seen.has(n.id)) out.push(build(n, seen));
  return out;
}

/** Depth of the deepest node, for sizing the chart. */
export function treeDepth(data: TreeDatum[]): number {
  return data.reduce((d, n) => Math.max(d, 1 + treeDepth(n.children)), 0);
}

/** Number of leaves, for sizing the chart. */
export function treeLeaves(data: TreeDatum[]): number {
  return data.reduce((s, n) => s + (n.children.length ? treeLeaves(n.children) : 1), 0);
}

export function treeOption(graph: SuiteGraph): EChartsCoreOption {
  const data = treeData(graph);
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  return {
    tooltip: {
      trigger: "item",
      formatter: (p: { name: string }) => tooltip(byId.get(p.name)),
    },
    series: data.map((root, i) => ({
      type: "tree",
      id: `tree-${i}`,
      data: [root],
      orient: "LR",
      top: 24,
      bottom: 24,
      left: 48,
      right: 140,
      roam: true,
      expandAndCollapse: false,
      symbol: "circle",
      initialTreeDepth: -1,
      label: { position: "top", fontSize: 11 },
      leaves: { label: { position: "right", align: "left" } },
      lineStyle: { width: 1.2 },
      animationDuration: 300,
    })),
  };
}

/**
 * The epoch chain: one node per epoch along x, its mean loss along y. An
 * epoch without a mean (cancelled, or still running) is a hollow marker at
 * the loss before it — never a point at 0, below every real epoch.
 */
export function chainOption(graph: SuiteGraph): EChartsCoreOption {
  let last = graph.nodes.find((n) => n.mean_loss !== null)?.mean_loss ?? 0;
  const nodes = graph.nodes.map((n) => {
    const measured = n.mean_loss !== null;
    if (n.mean_loss !== null) last = n.mean_loss;
    const name = n.label ? `${n.epoch_num}\n${n.label}` : `${n.epoch_num}`;
    return {
      id: n.id,
      name: n.id,
      value: [n.epoch_num ?? 0, last],
      symbolSize: 9,
      label: { show: graph.nodes.length <= 40, formatter: measured ? name : `${n.epoch_num}\nnot measured` },
      itemStyle: measured
        ? { color: COLORS.line }
        : { color: "transparent", borderColor: COLORS.none, borderWidth: 1.5, borderType: "dashed" },
    };
  });
  const unmeasured = new Set(graph.nodes.filter((n) => n.mean_loss === null).map((n) => n.id));
  const links = graph.edges.map((e) => {
    const move = e.events.some((x) => x.type === "rollback") ? "rollback" : e.events.length ? "update" : "none";
    return {
      source: e.source,
      target: e.target,
      lineStyle: unmeasured.has(e.target)
        ? { color: COLORS.none, width: 1, type: "dashed" }
        : { color: COLORS[move], width: move === "none" ? 1 : 2.5 },
      // Along steep edges the moves' words overlapped one another: they
      // show on the edge pointed at (and in its tooltip).
      label: { show: false, formatter: e.label, fontSize: 10 },
      emphasis: { label: { show: e.label !== "" } },
    };
  });
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  return {
    tooltip: {
      trigger: "item",
      formatter: (p: { dataType: string; name: string; data: { source?: string; target?: string } }) => {
        if (p.dataType === "edge") {
          const e = graph.edges.find((x) => x.source === p.data.source && x.target === p.data.target);
          return e?.label || "no artifact moved";
        }
        return tooltip(byId.get(p.name));
      },
    },
    // Room on the right for the last epoch's label (the axis ends at it).
    grid: { left: 64, right: 96, top: 32, bottom: 48 },
    // From the first epoch, not from 0.
    xAxis: { type: "value", name: "epoch", nameLocation: "middle", nameGap: 28, minInterval: 1, min: "dataMin", max: "dataMax" },
    yAxis: { type: "value", name: "mean loss", scale: true },
    dataZoom: [{ type: "inside" }],
    series: [
      {
        type: "graph",
        coordinateSystem: "cartesian2d",
        data: nodes,
        links,
        edgeSymbol: ["none", "arrow"],
        edgeSymbolSize: 6,
        label: { position: "top", fontSize: 10, lineHeight: 13 },
        // Neighbouring epochs of equal loss put their labels on one another:
        // the later one gives way (its tooltip still says it).
        labelLayout: { hideOverlap: true },
        animationDuration: 300,
      },
    ],
  };
}

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c] ?? c);
}

function tooltip(n: GraphNode | undefined): string {
  if (!n) return "";
  const lines = [`<b>${esc(nodeLabel(n))}</b>`];
  if (n.tree) lines.push(`${esc(n.tree.status)} · ${counted(n.tree.evaluations, "evaluation")}`);
  if (n.epoch_num !== null) lines.push(`epoch ${n.epoch_num}`);
  if (n.holdout_mean_loss !== null) lines.push(`held-out ${fmtLoss(n.holdout_mean_loss)}`);
  if (n.label) lines.push(esc(n.label));
  if (n.tree?.brief) lines.push(`<i>${esc(n.tree.brief.slice(0, 160))}</i>`);
  return lines.join("<br/>");
}

export interface TaskRow {
  task: string;
  loss: number;
  parent: number | null;
  /** loss − parent's loss: negative is better. */
  delta: number | null;
}

export interface NodeDetail {
  node: GraphNode;
  parent: GraphNode | null;
  tasks: TaskRow[];
  /** The artifact transition to diff, when the node wrote a new version. */
  transition: { artifact: string; from: number; to: number } | null;
}

/** What the side panel shows for a clicked tree node. */
export function nodeDetail(graph: SuiteGraph, id: string): NodeDetail | null {
  const node = graph.nodes.find((n) => n.id === id);
  if (!node) return null;
  const t = node.tree;
  const parent = t?.parent_id != null ? (graph.nodes.find((n) => n.id === `node-${t.parent_id}`) ?? null) : null;
  const parentLosses = parent?.tree?.task_losses ?? {};
  const tasks = Object.entries(t?.task_losses ?? {})
    .filter((e): e is [string, number] => typeof e[1] === "number")
    .map(([task, loss]) => {
      const p = parentLosses[task];
      return { task, loss, parent: p ?? null, delta: p === undefined ? null : loss - p };
    });
  const transition =
    t && t.changed_artifact && t.from_version !== null && t.to_version !== null
      ? { artifact: t.changed_artifact, from: t.from_version, to: t.to_version }
      : null;
  return { node, parent, tasks, transition };
}

/** A tree search's notes grouped by round, newest round first. */
export function notesByRound(graph: SuiteGraph): [number, TreeNoteView[]][] {
  const rounds = new Map<number, TreeNoteView[]>();
  for (const n of graph.notes) rounds.set(n.round, [...(rounds.get(n.round) ?? []), n]);
  return [...rounds.entries()].sort((a, b) => b[0] - a[0]);
}

/** `dead_direction` → `dead direction`. */
export function noteKind(kind: string): string {
  return kind.replace(/_/g, " ");
}
