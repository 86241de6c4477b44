// The Graph view of one suite (seed 004 §11): the experiment tree of a tree
// search, or the chain of epochs of a linear run. A click on a tree node shows
// what it changed, its losses against its parent and why the search kept or
// dropped it; the diff of its artifact opens in the side drawer.
import { useEffect, useMemo, useState } from "react";
import { api } from "../api";
import { useLive } from "../App";
import { DiffDrawer, type Transition } from "../components/DiffDrawer";
import { EChart, type ChartClick } from "../components/EChart";
import { Empty, ErrorNote } from "../components/common";
import {
  chainOption,
  nodeDetail,
  noteKind,
  notesByRound,
  STATUS_COLORS,
  treeData,
  treeDepth,
  treeLeaves,
  treeOption,
} from "../lib/graph";
import { fmtLoss } from "../lib/format";
import { useLiveQuery } from "../lib/query";
import { useDark } from "../lib/theme";

export function Graph({ suite }: { suite?: string }) {
  const { tick } = useLive();
  const dark = useDark();
  const [selected, setSelected] = useState<string | null>(null);
  const [open, setOpen] = useState<Transition | null>(null);
  const { data: graph, error } = useLiveQuery(["graph", suite], tick, () => api.suite_graph({ key: suite ?? "" }), !!suite);

  useEffect(() => {
    setSelected(null);
    setOpen(null);
  }, [suite]);

  const isTree = graph?.kind === "tree";
  const option = useMemo(() => (graph ? (isTree ? treeOption(graph) : chainOption(graph)) : null), [graph, isTree]);
  // A tree grows downwards with its leaves; keep every label readable.
  const height = useMemo(() => {
    if (!graph) return 420;
    if (!isTree) return 420;
    const data = treeData(graph);
    return Math.max(360, Math.min(2400, treeLeaves(data) * 34 + treeDepth(data) * 4));
  }, [graph, isTree]);
  const detail = useMemo(() => (graph && selected ? nodeDetail(graph, selected) : null), [graph, selected]);

  if (!suite) {
    return (
      <section>
        <header className="screen-head">
          <h2>Graph</h2>
        </header>
        <Empty title="Pick a suite">
          <p>Open a suite's graph from the Suites screen.</p>
        </Empty>
      </section>
    );
  }

  const onClick = (e: ChartClick & { name?: string; dataType?: string; data?: { source?: string } }) => {
    if (isTree && e.name) setSelected(e.name);
    else if (!isTree && e.dataType === "edge" && graph) {
      const edge = graph.edges.find((x) => x.source === e.data?.source);
      const ev = edge?.events[0];
      if (ev) {
        const epoch = graph.nodes.find((n) => n.id === edge!.source)?.epoch_num ?? 0;
        setOpen({ artifact: ev.artifact, from: ev.from_version, to: ev.to_version, epoch, type: ev.type });
      }
    }
  };

  const counts = graph?.nodes.reduce<Record<string, number>>((acc, n) => {
    const s = n.tree?.status ?? "epoch";
    acc[s] = (acc[s] ?? 0) + 1;
    return acc;
  }, {});

  return (
    <section>
      <header className="screen-head">
        <h2>
          Graph · <span data-testid="graph-suite">{suite}</span>
        </h2>
        {graph && <span className="badge">{isTree ? "experiment tree" : "chain of epochs"}</span>}
        <span className="spacer" />
        <a className="button" href={`#/charts/${encodeURIComponent(suite)}`}>
          Charts
        </a>
        <a className="button" href={`#/runs/${encodeURIComponent(suite)}`}>
          Runs
        </a>
      </header>
      <ErrorNote error={error} />
      {graph && graph.nodes.length === 0 && (
        <Empty title="Nothing to draw yet">
          <p>The graph fills in as epochs finish. A suite run with the tree optimizer shows its experiment tree here.</p>
        </Empty>
      )}
      {graph && graph.nodes.length > 0 && option && (
        <div className={isTree ? "graph-layout" : ""}>
          <div className="card">
            {isTree ? (
              <p className="muted small" data-testid="graph-legend">
                {Object.entries(STATUS_COLORS).map(([s, c]) => (
                  <span key={s} className="legend-item">
                    <span className="dot" style={{ background: c }} /> {s} {counts?.[s] ? `(${counts[s]})` : ""}
                  </span>
                ))}
                <span className="legend-item">★ best</span> · drag to pan, scroll to zoom, click a node for details
              </p>
            ) : (
              <p className="muted small">
                {graph.nodes.length} epochs; a thick edge is an update (green) or a rollback (red): click it for the diff.
              </p>
            )}
            <EChart
              id="suite-graph"
              option={option}
              label={
                isTree
                  ? `The tree search's ${graph.nodes.length} nodes and what each changed; the list of versions is on the Artifacts screen`
                  : `The ${graph.nodes.length} epochs in order, each edge labelled with what changed between two: ${graph.edges.filter((e) => e.label).length} with a change`
              }
              points={graph.nodes.length}
              height={height}
              onClick={onClick}
              dark={dark}
            />
          </div>
          {isTree && (
            <aside className="card node-panel" data-testid="node-panel">
              {!detail && <p className="muted">Click a node to see what it changed and how it scored.</p>}
              {detail && (
                <>
                  <h3>
                    Node #{detail.node.tree?.node_id}{" "}
                    <span className="badge" style={{ background: detail.node.tree ? STATUS_COLORS[detail.node.tree.status] : undefined }}>
                      {detail.node.tree?.status}
                    </span>
                    {detail.node.tree?.best && <span className="badge">★ best</span>}
                  </h3>
                  <div className="stats">
                    <div>
                      <span className="muted">mean loss</span> <b>{fmtLoss(detail.node.mean_loss)}</b>
                    </div>
                    {detail.parent && (
                      <div>
                        <span className="muted">parent #{detail.parent.tree?.node_id}</span>{" "}
                        <b>{fmtLoss(detail.parent.mean_loss)}</b>
                      </div>
                    )}
                    {detail.node.holdout_mean_loss !== null && (
                      <div>
                        <span className="muted holdout-text">held-out</span> <b>{fmtLoss(detail.node.holdout_mean_loss)}</b>
                      </div>
                    )}
                    <div>
                      <span className="muted">evaluations</span> <b>{detail.node.tree?.evaluations}</b>
                    </div>
                    {detail.node.epoch_num !== null && (
                      <div>
                        <span className="muted">first epoch</span> <b>{detail.node.epoch_num}</b>
                      </div>
                    )}
                  </div>
                  {detail.node.tree?.round != null && (
                    <p className="muted small">made in round {detail.node.tree.round}</p>
                  )}
                  {detail.node.tree?.rationale && (
                    <p>
                      <span className="muted">why:</span> {detail.node.tree.rationale}
                    </p>
                  )}
                  {detail.node.tree?.guidance && (
                    <p data-testid="node-guidance">
                      <span className="muted">direction given:</span> {detail.node.tree.guidance}
                    </p>
                  )}
                  {detail.node.tree?.brief && (
                    <p>
                      <span className="muted">brief:</span> {detail.node.tree.brief}
                    </p>
                  )}
                  {detail.node.tree?.note && (
                    <p data-testid="node-note">
                      <span className="muted">verdict:</span> {detail.node.tree.note}
                    </p>
                  )}
                  {detail.transition ? (
                    <button
                      data-testid="node-diff"
                      onClick={() =>
                        setOpen({
                          ...detail.transition!,
                          epoch: detail.node.epoch_num ?? 0,
                          type: "update",
                          caption: `Node #${detail.node.tree?.node_id} against its parent #${detail.parent?.tree?.node_id ?? "?"}`,
                        })
                      }
                    >
                      Diff {detail.transition.artifact} v{detail.transition.from}→v{detail.transition.to}
                    </button>
                  ) : (
                    detail.node.tree?.changed_artifact && (
                      <p className="muted small">No version of {detail.node.tree.changed_artifact} was written.</p>
                    )
                  )}
                  {detail.tasks.length > 0 && (
                    <table className="table compact" data-testid="node-tasks">
                      <thead>
                        <tr>
                          <th>task</th>
                          <th className="num">loss</th>
                          <th className="num">parent</th>
                          <th className="num">change</th>
                        </tr>
                      </thead>
                      <tbody>
                        {detail.tasks.map((t) => (
                          <tr key={t.task}>
                            <td>{t.task}</td>
                            <td className="num">{fmtLoss(t.loss)}</td>
                            <td className="num">{fmtLoss(t.parent)}</td>
                            <td className={`num ${t.delta === null ? "" : t.delta < 0 ? "added" : t.delta > 0 ? "removed" : ""}`}>
                              {t.delta === null ? "–" : `${t.delta > 0 ? "+" : ""}${t.delta.toFixed(4)}`}
                            </td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  )}
                </>
              )}
            </aside>
          )}
        </div>
      )}
      {isTree && graph && graph.notes.length > 0 && (
        <div className="card" data-testid="tree-notes">
          <h3>What steered the search</h3>
          <p className="muted small">
            The analyst's hints (directions that died, axes that saturated) and the ideation proposals made when the search
            stalled, by round.
          </p>
          {notesByRound(graph).map(([round, notes]) => (
            <div key={round}>
              <h4>Round {round}</h4>
              <ul className="notes">
                {notes.map((n, i) => (
                  <li key={i}>
                    <span className={`badge note-${n.source}`}>{n.source}</span> <b>{noteKind(n.kind)}</b>
                    {n.artifact && <span className="muted"> · {n.artifact}</span>}: {n.text}
                    {n.expected_loss_reduction !== null && (
                      <span className="muted small">
                        {" "}
                        (expects −{n.expected_loss_reduction.toFixed(3)}
                        {n.confidence !== null && ` at ${Math.round(n.confidence * 100)}%`})
                      </span>
                    )}
                    {n.node_id !== null && (
                      <button className="link" onClick={() => setSelected(`node-${n.node_id}`)}>
                        → node #{n.node_id}
                      </button>
                    )}
                  </li>
                ))}
              </ul>
            </div>
          ))}
        </div>
      )}
      <DiffDrawer transition={open} onClose={() => setOpen(null)} />
    </section>
  );
}
