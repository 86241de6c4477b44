// Live progress of launched suites, pushed from the server's event bus over
// SSE: epoch and task progress bars, what waits for a person, cancel; each
// launch's epochs and runs as the server has them (live/History).
import { useState } from "react";
import { api } from "../api";
import { useLive } from "../App";
import { Empty, ErrorNote, Outcome, Status, Ticked } from "../components/common";
import type { InterventionItem } from "../generated/InterventionItem";
import type { LaunchView } from "../generated/LaunchView";
import type { WorkersView } from "../generated/WorkersView";
import type { SuiteProgress } from "../lib/progress";
import { useLiveQuery } from "../lib/query";
import { History } from "./live/History";

function Bar({ done, total, label, id }: { done: number; total: number; label: string; id: string }) {
  const pct = total > 0 ? Math.min(100, (100 * done) / total) : 0;
  return (
    <div className="progress" data-testid={id} data-done={done} data-total={total}>
      <div className="progress-label">
        {label} <b>{done}</b> / {total}
      </div>
      <div className="progress-track">
        <div className="progress-fill" style={{ width: `${pct}%` }} />
      </div>
    </div>
  );
}

/**
 * What a person is asked about a running launch's suite: a gated update the
 * run waits for (or goes on without), a question an agent task waits on.
 */
function Asked({ questions }: { questions: InterventionItem[] }) {
  if (questions.length === 0) return null;
  return (
    <div className="callout" data-testid="waits-for-a-person">
      {questions.map((q) => {
        const waits = q.kind !== "artifact_update" || q.update?.mode === "wait";
        return (
          <p key={q.id}>
            <b>{waits ? "Waiting for your answer" : "Asks for your approval (the run goes on meanwhile)"}</b>: <Ticked text={q.subject} /> —{" "}
            <a href="#/inbox">answer in the Inbox</a>
          </p>
        );
      })}
    </div>
  );
}

/** Launches whose epochs and runs show without asking (the newest); older ones load on a click. */
const OPEN_CARDS = 5;

function Card({
  launch,
  p,
  asked,
  onCancel,
  open,
}: {
  launch: LaunchView;
  p: SuiteProgress | undefined;
  asked: InterventionItem[];
  onCancel: () => void;
  open: boolean;
}) {
  const status = p?.ended?.status ?? launch.status;
  const running = status === "running" || status === "queued";
  return (
    <div className="card live-card" data-testid="launch" data-status={status} data-suite={launch.suite} data-launch-id={launch.id}>
      <header className="screen-head">
        <h3>
          {launch.suite} <span className="muted">launch {launch.id}</span>
        </h3>
        <Status status={status} />
        <Outcome runs={launch.runs} />
        <span className="spacer" />
        {running && (
          <button className="danger" onClick={onCancel} data-testid="cancel">
            Cancel
          </button>
        )}
        <a className="button" href={`#/charts/${encodeURIComponent(launch.suite)}`}>
          Charts
        </a>
      </header>
      <p className="muted small">
        {launch.suite_path} · {launch.optimizer} · seed {launch.seed ?? "not chosen yet"}
        {launch.holder && <> · <span data-testid="holder">{launch.holder}</span></>}
      </p>
      <Bar id="epoch-progress" label="epochs" done={Math.max(p?.epochsDone ?? 0, launch.epochs_done)} total={launch.epochs_requested} />
      {running && <Asked questions={asked.filter((q) => launch.suite_id !== null && q.suite_id === launch.suite_id)} />}
      {p && p.currentEpoch !== null && (
        <Bar id="task-progress" label={`epoch ${p.currentEpoch}: runs`} done={p.tasksDone} total={p.tasksTotal} />
      )}
      {p && p.running.length > 0 && (
        <p className="small" data-testid="running">
          running:{" "}
          {p.running
            // A run another worker took names that worker.
            .map((r) => (r.worker && r.worker !== launch.holder ? `${r.task} (on ${r.worker})` : r.task))
            .join(", ")}
        </p>
      )}
      {p && p.alerts.length > 0 && (
        <ul className="alerts" data-testid="audit-alerts">
          {p.alerts.map((a, i) => (
            <li key={i} className="error">
              <b>auditor · {a.kind}</b> (<a href={`#/runs/run/${a.runId}`}>run {a.runId}</a>): {a.message}
            </li>
          ))}
        </ul>
      )}
      {p && p.directives.length > 0 && (
        <ul className="directives small" data-testid="supervisor-directives">
          {p.directives.map((d, i) => (
            <li key={i}>
              <b>supervisor · {d.action}</b>{" "}
              ({d.source}, <a href={`#/runs/run/${d.runId}`}>{d.trajectory}</a> #{d.sequence}) → {d.applied}
              {d.reasoning && <span className="muted">: {d.reasoning}</span>}
            </li>
          ))}
        </ul>
      )}
      {p?.settled && (
        <p className="small" data-testid="run-settled" title="the versions this run measured best are the active ones">
          {p.settled}
        </p>
      )}
      {(p?.ended?.error ?? launch.error) && <ErrorNote error={p?.ended?.error ?? launch.error} />}
      {launch.epochs !== null && <History launch={launch} ended={!running} open={open || running} />}
    </div>
  );
}

/**
 * The workers on the database (`attractor worker` processes, here or on
 * other machines) and the runs queued for them: shown once any worker
 * served, so a person sees who takes a suite's runs and which stopped.
 */
function Workers({ view }: { view: WorkersView }) {
  if (view.workers.length === 0 && view.queue.length === 0) return null;
  return (
    <div className="card" data-testid="workers">
      <h3>Workers</h3>
      {view.queue.length > 0 && (
        <p className="small" data-testid="queue-depth">
          queued:{" "}
          {view.queue.map((q) => `${q.suite} ${q.queued_runs} ${q.queued_runs === 1 ? "run" : "runs"}`).join(" · ")}
        </p>
      )}
      <table className="small">
        <thead>
          <tr>
            <th>worker</th>
            <th>state</th>
            <th>offers</th>
            <th>at once</th>
          </tr>
        </thead>
        <tbody>
          {view.workers.map((w) => (
            <tr key={`${w.host}:${w.pid}:${w.holder}`} data-state={w.state}>
              <td>{w.holder}</td>
              <td className={w.state === "quiet" ? "error" : w.state === "stopped" ? "muted" : undefined}>
                {w.state === "quiet" ? `no heartbeat for ${Math.round(w.quiet_secs)} s` : w.state}
              </td>
              <td>{w.offers.length > 0 ? w.offers.join(", ") : "—"}</td>
              <td>{w.concurrency}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Live() {
  const { tick, progress } = useLive();
  const { data: launches, error: loadError } = useLiveQuery(["launches"], tick, () => api.launches());
  // The same query as the Inbox's: what waits for a person, per suite.
  const pending = useLiveQuery(["interventions"], tick, () => api.interventions()).data?.pending ?? [];
  const workers = useLiveQuery(["workers"], tick, () => api.workers()).data;
  const [cancelError, setCancelError] = useState<string | null>(null);
  const error = cancelError ?? loadError;

  const cancel = (id: number) => api.cancel({ id }).catch((e: Error) => setCancelError(e.message));

  return (
    <section>
      <header className="screen-head">
        <h2>Live progress</h2>
      </header>
      <ErrorNote error={error} />
      {workers && <Workers view={workers} />}
      {launches && launches.length === 0 && (
        <Empty title="Nothing launched yet">
          <p>
            Suites started from <a href="#/launch">Launch</a>, with <code>attractor run</code> in a terminal, or by an{" "}
            <code>attractor worker</code> on this database show their progress here as it happens: epochs, runs as they
            finish, and a Cancel button.
          </p>
        </Empty>
      )}
      {launches?.map((l, i) => (
        <Card
          key={l.id}
          open={i < OPEN_CARDS}
          launch={l}
          p={progress[l.suite]?.launchId === l.id ? progress[l.suite] : undefined}
          asked={pending}
          onCancel={() => cancel(l.id)}
        />
      ))}
    </section>
  );
}
