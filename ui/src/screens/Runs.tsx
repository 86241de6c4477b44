// Runs: one table per epoch with every run's status, its loss and what each
// part of the loss added to it, newest epoch first, a page of epochs at a time.
import { useEffect, useState } from "react";
import { api } from "../api";
import { useLive } from "../App";
import { Empty, ErrorNote, Pager, Status } from "../components/common";
import type { LossParts } from "../generated/LossParts";
import type { RunItem } from "../generated/RunItem";
import { fmtDuration, fmtLoss, fmtModelSpend } from "../lib/format";
import { useLiveQuery } from "../lib/query";

/** Epochs on one page of the Runs screen. */
export const EPOCHS_PER_PAGE = 5;

const PARTS: { key: keyof LossParts; label: string; what: string }[] = [
  { key: "eval", label: "eval", what: "1 − eval score" },
  { key: "critique", label: "critique", what: "1 − critique score" },
  { key: "gate_rejections", label: "gates", what: "gate rejections over the limit" },
  { key: "budget", label: "budget", what: "share of the budget used" },
  { key: "status", label: "outcome", what: "outcome penalty (complete 0, partial 0.5, failed 1)" },
];

/** What one part added to a run's loss: its weight × its component. */
function PartCell({ run, part }: { run: RunItem; part: (typeof PARTS)[number] }) {
  const c = run.parts?.[part.key];
  const w = run.weights?.[part.key];
  if (c === undefined || w === undefined) return <td className="num">–</td>;
  return (
    <td className="num" title={`${part.what}: ${fmtLoss(c)} × weight ${fmtLoss(w)}`}>
      {fmtLoss(c * w)}
    </td>
  );
}

export function Runs({ suite }: { suite?: string }) {
  const { tick } = useLive();
  const [page, setPage] = useState(0);
  const suites = useLiveQuery(["suites"], tick, () => api.suites()).data ?? [];
  // One page of epochs from the server (newest first): a long history is
  // never read whole.
  const { data, error } = useLiveQuery(
    ["epochs", suite, page],
    tick,
    () => api.suite_epochs({ key: suite ?? "", offset: page * EPOCHS_PER_PAGE, limit: EPOCHS_PER_PAGE }),
    !!suite,
    2, // the suite's pages are one thing: the last page stays while the next loads
  );
  useEffect(() => setPage(0), [suite]);

  const total = data?.page.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / EPOCHS_PER_PAGE));
  // The page on screen: the answer's own (the previous page stays while the next loads).
  const shown = data ? Math.floor(data.page.offset / EPOCHS_PER_PAGE) : 0;
  const onPage = data ? [...data.epochs].reverse() : [];
  const pager = (
    <Pager label="epoch pages" testId="pager" page={shown} pages={pages} onPage={setPage}>
      epochs {onPage[0]?.epoch_num}–{onPage[onPage.length - 1]?.epoch_num} of {total} · page {shown + 1} of {pages}
    </Pager>
  );
  // Runs in the suite's task order (they finish, and are stored, in any order).
  const order = new Map((data?.tasks ?? []).map((t, i) => [t.name, i]));
  const byTask = (a: { task: string; id: number }, b: { task: string; id: number }) =>
    (order.get(a.task) ?? 1e9) - (order.get(b.task) ?? 1e9) || a.id - b.id;
  return (
    <section>
      <header className="screen-head">
        <h2>Runs</h2>
        <select value={suite ?? ""} onChange={(e) => (window.location.hash = `#/runs/${encodeURIComponent(e.target.value)}`)} aria-label="suite">
          <option value="" disabled>
            choose a suite…
          </option>
          {suites.map((s) => (
            <option key={s.id} value={s.name}>
              {s.name}
            </option>
          ))}
        </select>
      </header>
      <ErrorNote error={error} />
      {data?.suite.model && (
        <p className="muted small" data-testid="suite-model">
          Model calls of this suite so far: {fmtModelSpend(data.suite.model)}
        </p>
      )}
      {!suite && (
        <Empty title="Pick a suite">
          <p>Every epoch runs each task of the suite once; pick a suite to see its runs, their loss breakdown and output.</p>
        </Empty>
      )}
      {data && total === 0 && <Empty title="No runs yet">Launch the suite to see its runs here.</Empty>}
      {pager}
      {onPage.map((e) => (
        <div className="card" key={e.epoch_id} data-epoch={e.epoch_num}>
          <header className="screen-head">
            <h3>Epoch {e.epoch_num}</h3>
            <span>
              mean loss <b>{fmtLoss(e.mean_loss)}</b>
              {e.holdout_mean_loss !== null && <span className="holdout-text"> · held-out {fmtLoss(e.holdout_mean_loss)}</span>}
            </span>
            {e.completed_at === null && <Status status="unfinished" />}
            <span className="spacer" />
            <span className="muted small">
              {e.transitions.join("; ")}
            </span>
          </header>
          {(e.note !== null || (e.model !== null && e.model.calls > 0)) && (
            <p className="muted small epoch-outcome">
              {e.note !== null && <span className="epoch-note">no change: {e.note}</span>}
              {e.note !== null && e.model !== null && e.model.calls > 0 && " · "}
              {e.model !== null && e.model.calls > 0 && <span className="epoch-model">{fmtModelSpend(e.model)}</span>}
            </p>
          )}
          <table className="table compact">
            <thead>
              <tr className="group">
                <th colSpan={3} />
                <th colSpan={PARTS.length} className="part-group" title="each part's component in [0, 1] times its weight; they add up to the loss">
                  what each part added to the loss
                </th>
                <th />
              </tr>
              <tr>
                <th>Task</th>
                <th>Status</th>
                <th className="num">Loss</th>
                {PARTS.map((p) => (
                  <th key={p.key} className="num" title={`${p.what}, times its weight`}>
                    {p.label}
                  </th>
                ))}
                <th className="num">Time</th>
              </tr>
            </thead>
            <tbody>
              {[...e.runs].sort(byTask).map((r) => (
                <tr key={r.id} className={r.counted ? "" : "muted"} data-run={r.id}>
                  <td>
                    <a href={`#/runs/run/${r.id}`}>{r.task}</a>
                    {r.holdout && <span className="badge holdout">held out</span>}
                    {!r.counted && r.status !== "running" && <span className="muted small"> (not counted)</span>}
                  </td>
                  <td>
                    <Status status={r.status} />
                  </td>
                  <td className="num">{fmtLoss(r.loss)}</td>
                  {PARTS.map((p) => (
                    <PartCell key={p.key} run={r} part={p} />
                  ))}
                  <td className="num">{fmtDuration(r.duration_ms)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
      {pager}
    </section>
  );
}
