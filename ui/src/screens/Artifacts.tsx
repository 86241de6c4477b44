// Artifact history: every version including v0, which one is active, the
// diff of any two versions (unified or side by side), and a rollback that
// asks for confirmation first.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useState } from "react";
import { api } from "../api";
import { useLive } from "../App";
import { DiffModeToggle, DiffView } from "../components/DiffView";
import { Confirm, Empty, ErrorNote } from "../components/common";
import { fmtLoss, fmtTime } from "../lib/format";
import { ARTIFACTS } from "../lib/live";
import { useLiveQuery } from "../lib/query";

export function Artifacts({ name }: { name?: string }) {
  // Versions change on artifact events and closed epochs, not on each run's end.
  const { suiteChanges, reconnects } = useLive();
  const tick = (suiteChanges[ARTIFACTS] ?? 0) + reconnects;
  const queries = useQueryClient();
  const [from, setFrom] = useState<number | null>(null);
  const [to, setTo] = useState<number | null>(null);
  const [mode, setMode] = useState<"unified" | "split">("split");
  const [confirm, setConfirm] = useState<number | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const list = useLiveQuery(["artifacts"], tick, () => api.artifacts());
  const versions = useLiveQuery(["versions", name], tick, () => api.artifact_versions({ name: name ?? "" }), !!name);
  const history = name ? versions.data : null;

  // Another artifact: nothing of the last one's comparison carries over (its
  // version numbers may not exist here).
  useEffect(() => {
    setFrom(null);
    setTo(null);
    setFailure(null);
    setNotice(null);
  }, [name]);

  // Default comparison: the latest version against its parent (or v0).
  useEffect(() => {
    if (!history) return;
    const active = history.versions.find((v) => v.is_active) ?? history.versions[0];
    const latest = history.versions[history.versions.length - 1];
    const target = latest.version !== 0 ? latest : active;
    setTo(target.version);
    setFrom(target.parent_version ?? 0);
    // Only when another artifact is opened, not on every refresh.
  }, [history?.artifact.name]);

  // Only once this artifact's history is in: until then `from` and `to` may
  // still be the previous artifact's.
  const loaded = history?.artifact.name === name ? name : undefined;
  const compared = useQuery({
    queryKey: ["diff", loaded, from, to],
    queryFn: () => api.artifact_diff({ name: loaded ?? "", from: from ?? 0, to: to ?? 0 }),
    enabled: !!loaded && from !== null && to !== null,
  });
  const diff = compared.data ?? null;
  // One version against itself is read, not compared: its text (an
  // artifact with only its default, v0, had nothing to show).
  const alone = history && from !== null && from === to ? history.versions.find((v) => v.version === to) : undefined;
  const error = failure ?? list.error ?? versions.error ?? compared.error?.message ?? null;

  const sorted = useMemo(
    () => [...(list.data ?? [])].sort((a, b) => Number(b.versions > 1) - Number(a.versions > 1) || a.name.localeCompare(b.name)),
    [list.data],
  );

  const doRollback = async (version: number) => {
    setConfirm(null);
    if (!name) return;
    try {
      await api.rollback_artifact({ name, request: { version } });
      setNotice(`${name}: version ${version} is now active.`);
      await queries.invalidateQueries({ queryKey: ["versions", name] });
      await queries.invalidateQueries({ queryKey: ["artifacts"] });
    } catch (e) {
      setFailure((e as Error).message);
    }
  };

  return (
    <section className="split-screen">
      <aside className="list">
        <h2>Artifacts</h2>
        {sorted.map((a) => (
          <a key={a.name} href={`#/artifacts/${encodeURIComponent(a.name)}`} className={a.name === name ? "active" : ""} data-artifact={a.name}>
            <b>{a.name}</b>
            <span className="muted small">
              {a.kind} · {a.origin} · v{a.active_version} active · {a.versions} version{a.versions === 1 ? "" : "s"}
            </span>
          </a>
        ))}
      </aside>
      <div className="detail">
        <ErrorNote error={error} />
        {notice && <p className="notice">{notice}</p>}
        {!name && (
          <Empty title="Pick an artifact">
            <p>
              Artifacts are the prompts and settings the outer loop learns. Version 0 is the built-in (or suite-declared) default;
              each update adds a version, and a rollback only moves the active marker — nothing is deleted.
            </p>
          </Empty>
        )}
        {history && (
          <>
            <header className="screen-head">
              <h2>{history.artifact.name}</h2>
              <span className="muted">
                {history.artifact.kind} · {history.artifact.origin}
              </span>
            </header>
            <p className="muted">{history.artifact.description}</p>
            <table className="table compact" data-testid="versions">
              <thead>
                <tr>
                  <th>Version</th>
                  <th>From</th>
                  <th>Created</th>
                  <th>Change</th>
                  <th className="num" title="the mean loss of the closed epochs that ran with the version (as the active one, or as a tree search's candidate)">Loss when run</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {history.versions.map((v) => (
                  <tr key={v.version} className={v.is_active ? "active-row" : ""} data-version={v.version}>
                    <td>
                      <b>v{v.version}</b> {v.is_active && <span className="badge status-running" data-testid="active-marker">active</span>}
                      {v.rolled_back && (
                        <span className="badge status-failed" data-testid="rolled-back-marker" title="an epoch rolled it back: the loss rose after it became active">
                          rolled back
                        </span>
                      )}
                    </td>
                    <td>{v.version === 0 ? "default" : `v${v.parent_version}`}</td>
                    <td className="small">
                      {v.tree_node
                        ? `tree node #${v.tree_node.node_id} of ${v.suite}${v.epoch_num !== null ? `, epoch ${v.epoch_num}` : ""} — ${v.tree_node.status}`
                        : v.epoch_num !== null
                          ? `epoch ${v.epoch_num} of ${v.suite}`
                          : v.version === 0
                            ? "built in"
                            : "by hand"}
                      <div className="muted">{fmtTime(v.created_at)}</div>
                    </td>
                    <td className="small">
                      {v.diff_from_parent ? (
                        <>
                          <span className="added">+{v.diff_from_parent.added}</span> <span className="removed">−{v.diff_from_parent.removed}</span>
                        </>
                      ) : (
                        "–"
                      )}
                    </td>
                    <td className="num small" data-testid="version-loss">
                      {v.measured ? (
                        <>
                          {fmtLoss(v.measured.mean_loss)}
                          <div className="muted">
                            {v.measured.epochs} epoch{v.measured.epochs === 1 ? "" : "s"}
                          </div>
                        </>
                      ) : (
                        <span className="muted" title="no closed epoch ran with it as the active version">
                          {v.is_active ? "not measured yet" : "–"}
                        </span>
                      )}
                    </td>
                    <td>
<div className="actions">
                      <button
                        onClick={() => {
                          setFrom(v.version);
                          setTo(v.version);
                        }}
                        data-testid={`view-${v.version}`}
                      >
                        View
                      </button>
                      <button
                        onClick={() => {
                          setFrom(v.parent_version ?? 0);
                          setTo(v.version);
                        }}
                        disabled={v.version === 0}
                      >
                        Diff
                      </button>
                      {!v.is_active && (
                        <button onClick={() => setConfirm(v.version)} data-testid={`activate-${v.version}`}>
                          {v.version < history.artifact.active_version ? "Roll back to this" : "Make active"}
                        </button>
                      )}
                    </div>
</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <div className="card">
              <header className="screen-head">
                <h3>{alone ? `Content of v${alone.version}` : "Compare"}</h3>
                <select value={from ?? 0} onChange={(e) => setFrom(Number(e.target.value))} aria-label="from version">
                  {history.versions.map((v) => (
                    <option key={v.version} value={v.version}>
                      v{v.version}
                    </option>
                  ))}
                </select>
                →
                <select value={to ?? 0} onChange={(e) => setTo(Number(e.target.value))} aria-label="to version">
                  {history.versions.map((v) => (
                    <option key={v.version} value={v.version}>
                      v{v.version}
                    </option>
                  ))}
                </select>
                <span className="spacer" />
                <DiffModeToggle mode={mode} onChange={setMode} />
              </header>
              {alone ? (
                <pre className="diff artifact-content" data-testid="version-content">
                  {alone.content}
                </pre>
              ) : (
                diff && <DiffView diff={diff} mode={mode} />
              )}
            </div>
          </>
        )}
        {confirm !== null && history && (
          <Confirm
            text={
              <>
                <h3>Make v{confirm} of {history.artifact.name} active?</h3>
                <p>
                  Runs from the next epoch on will use v{confirm} instead of v{history.artifact.active_version}. Nothing is deleted: you can
                  switch back at any time.
                </p>
              </>
            }
            confirm={`Make v${confirm} active`}
            onConfirm={() => doRollback(confirm)}
            onCancel={() => setConfirm(null)}
          />
        )}
      </div>
    </section>
  );
}
