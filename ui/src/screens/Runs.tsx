// Runs: one table per epoch with every run's loss breakdown and status.
import { useEffect, useState } from "react";
import { api } from "../api";
import { useLive } from "../App";
import { Empty, ErrorNote, Status } from "../components/common";
import type { SuiteEpochs } from "../generated/SuiteEpochs";
import type { SuiteItem } from "../generated/SuiteItem";
import { fmtDuration, fmtLoss, fmtModelSpend } from "../lib/format";

export function Runs({ suite }: { suite?: string }) {
  const { tick } = useLive();
  const [suites, setSuites] = useState<SuiteItem[]>([]);
  const [data, setData] = useState<SuiteEpochs | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    api.suites().then(setSuites).catch(() => undefined);
  }, [tick]);
  useEffect(() => {
    if (!suite) return;
    api.epochs(suite).then(setData).catch((e: Error) => setError(e.message));
  }, [suite, tick]);

  const epochs = data ? [...data.epochs].reverse() : [];
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
      {data && epochs.length === 0 && <Empty title="No runs yet">Launch the suite to see its runs here.</Empty>}
      {epochs.map((e) => (
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
              {e.events.map((ev) => `${ev.type} ${ev.artifact} v${ev.from_version}→v${ev.to_version}`).join("; ")}
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
              <tr>
                <th>Task</th>
                <th>Status</th>
                <th className="num">Loss</th>
                <th className="num" title="1 − eval score, before its weight">eval</th>
                <th className="num" title="1 − critique score, before its weight">critique</th>
                <th className="num" title="gate rejections over the limit, before its weight">gates</th>
                <th className="num" title="share of the budget used, before its weight">budget</th>
                <th className="num" title="status penalty (complete 0, partial 0.5, failed 1), before its weight">status</th>
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
                  <td className="num">{fmtLoss(r.parts?.eval)}</td>
                  <td className="num">{fmtLoss(r.parts?.critique)}</td>
                  <td className="num">{fmtLoss(r.parts?.gate_rejections)}</td>
                  <td className="num">{fmtLoss(r.parts?.budget)}</td>
                  <td className="num">{fmtLoss(r.parts?.status)}</td>
                  <td className="num">{fmtDuration(r.duration_ms)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </section>
  );
}
