// Suites: every suite with its epoch count, latest mean loss and status, and
// the actions people take from here.
import { useState } from "react";
import { api } from "../api";
import { useLive } from "../App";
import { Empty, ErrorNote, Outcome, Status } from "../components/common";
import { ExportReport } from "../components/ExportReport";
import { useExample } from "../lib/examples";
import type { SuiteItem } from "../generated/SuiteItem";
import { fmtLoss } from "../lib/format";
import { useLiveQuery } from "../lib/query";

/** A suite whose last launch stopped before the end: its next launch resumes it. */
function resumable(s: SuiteItem): boolean {
  return s.status === "unfinished" || s.status === "failed";
}

export function Suites() {
  const { tick } = useLive();
  const { data: suites, error: loadError } = useLiveQuery(["suites"], tick, () => api.suites());
  // An export that failed says so here, above the list.
  const [exportError, setExportError] = useState<string | null>(null);
  const first = useExample("descent.suite.yaml");

  return (
    <section>
      <header className="screen-head">
        <h2>Suites</h2>
        <a className="button primary" href="#/launch">
          Launch a suite
        </a>
      </header>
      <ErrorNote error={exportError ?? loadError} />
      {suites && suites.length === 0 && (
        <Empty title="No suites yet">
          <p>A suite is a YAML file of tasks that Attractor runs every epoch and scores with a loss.</p>
          <p>
            Start one from <a href={`#/launch?path=${encodeURIComponent(first)}`}>Launch</a> with the bundled example{" "}
            <code data-testid="first-example">{first}</code>, or from a terminal:
          </p>
          <pre>attractor run {first} --epochs 12 --optimizer evolve</pre>
        </Empty>
      )}
      {suites && suites.length > 0 && (
        <table className="table" data-testid="suites">
          <thead>
            <tr>
              <th>Suite</th>
              <th className="num">Epochs</th>
              <th className="num">Latest mean loss</th>
              <th>Tasks</th>
              <th>Status</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {suites.map((s) => (
              <tr key={s.id} data-suite={s.name}>
                <td>
                  <a href={`#/charts/${encodeURIComponent(s.name)}`}>
                    <b>{s.name}</b>
                  </a>
                  {s.last_error && <div className="error small">{s.last_error.split("\n")[0]}</div>}
                </td>
                <td className="num">{s.epochs}</td>
                <td className="num">{fmtLoss(s.latest_mean_loss)}</td>
                <td>
                  {s.tasks}
                  {s.holdout_tasks > 0 && <span className="muted"> ({s.holdout_tasks} held out)</span>}
                </td>
                <td>
                  <span
                    title={
                      s.status === "unfinished"
                        ? "An epoch is open: another process is running it, or it was interrupted. Launching the suite resumes it."
                        : s.status === "paused"
                          ? "A trajectory waits for your answer in the Inbox; it goes on once answered."
                          : s.status === "awaiting_approval"
                            ? "Its watched file's commands wait for your approval in the Inbox; nothing runs before that."
                            : undefined
                    }
                  >
                    <Status status={s.status} />
                  </span>{" "}
                  <Outcome runs={s.last_launch_runs} title="How the runs of its last launch ended" />
                </td>
                <td>
<div className="actions">
                  <a className="button" href={`#/charts/${encodeURIComponent(s.name)}`}>
                    Charts
                  </a>
                  <a className="button" href={`#/graph/${encodeURIComponent(s.name)}`}>
                    Graph
                  </a>
                  <a className="button" href={`#/runs/${encodeURIComponent(s.name)}`}>
                    Runs
                  </a>
                  {s.status === "running" ? (
                    <a className="button" href="#/live">
                      Watch
                    </a>
                  ) : (
                    <a
                      className="button"
                      href={`#/launch?path=${encodeURIComponent(s.suite_path ?? "")}&again=${encodeURIComponent(s.name)}${resumable(s) ? "&resume=1" : ""}`}
                      title={`${resumable(s) ? "finish what the last launch left, with its settings" : "with the last launch's settings"}: ${s.suite_path ?? "choose the suite file"}`}
                      data-testid="launch-again"
                    >
                      {resumable(s) ? "Resume" : "Launch again"}
                    </a>
                  )}
                  <ExportReport suite={s} onError={setExportError} />
                </div>
</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
