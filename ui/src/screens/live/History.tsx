// What a launch has done, read back from the server rather than folded from
// the events this page happened to see: its epochs' losses and moves, and
// its runs. After a reload, for a launch of another process, and for one
// that ended before the page opened it is the same card as live.
import { useState } from "react";
import { api } from "../../api";
import { useLive } from "../../App";
import { ErrorNote, Status } from "../../components/common";
import type { EpochView } from "../../generated/EpochView";
import type { LaunchView } from "../../generated/LaunchView";
import type { RunItem } from "../../generated/RunItem";
import { fmtDuration, fmtLoss } from "../../lib/format";
import { useLiveQuery } from "../../lib/query";

/** Epochs of a launch a card reads: its newest ones. */
export const HISTORY_EPOCHS = 10;
/** Runs a card lists before it points to the Runs screen. */
export const RUNS_SHOWN = 30;

/**
 * An epoch's line. An open epoch of a launch that has ended (cancelled,
 * stopped, its process gone) is not running: it is finished by the
 * suite's next launch.
 */
function EpochLine({ e, ended }: { e: EpochView; ended: boolean }) {
  const closed = e.completed_at !== null;
  return (
    <li data-epoch={e.epoch_num}>
      epoch {e.epoch_num}:{" "}
      {closed ? (
        <>
          mean loss <b>{fmtLoss(e.mean_loss)}</b>
          {e.holdout_mean_loss !== null && <span className="holdout-text"> · held-out {fmtLoss(e.holdout_mean_loss)}</span>}
        </>
      ) : ended ? (
        <span className="muted" data-testid="epoch-unfinished">
          unfinished — the suite's next launch finishes it
        </span>
      ) : (
        <span className="muted">running</span>
      )}
      {e.transitions.length > 0 && <span className="muted"> · {e.transitions.join("; ")}</span>}
      {e.note !== null && <span className="muted"> · no change ({e.note})</span>}
    </li>
  );
}

/** Newest epoch first; in an epoch, the runs that ended last first. */
function newestRuns(epochs: EpochView[]): RunItem[] {
  return [...epochs]
    .reverse()
    .flatMap((e) => [...e.runs].sort((a, b) => (b.finished_at ?? "").localeCompare(a.finished_at ?? "")));
}

export function History({ launch, ended, open }: { launch: LaunchView; ended: boolean; open: boolean }) {
  const { tick, reconnects } = useLive();
  const [more, setMore] = useState(false);
  // Older launches' cards wait for a click: fifty cards would be fifty reads.
  const [asked, setAsked] = useState(false);
  const shown = open || asked;
  // A running launch changes with every run that ends; an ended one only if
  // events were missed (a reconnection). `ended` is part of the key: the
  // answer read while it ran is never taken for the ended launch's.
  const version = ended ? reconnects : tick;
  const { data, error } = useLiveQuery(
    ["launch-epochs", launch.id, ended],
    version,
    () => api.suite_epochs({ key: launch.suite, runs: true, launch: launch.id, limit: HISTORY_EPOCHS }),
    shown,
    2,
  );
  if (!shown) {
    return (
      <button className="link" onClick={() => setAsked(true)} data-testid="show-history">
        Show its epochs and runs
      </button>
    );
  }
  if (error) return <ErrorNote error={error} />;
  if (!data) return null;
  const runs = newestRuns(data.epochs);
  const listed = more ? runs : runs.slice(0, RUNS_SHOWN);
  const runsHref = `#/runs/${encodeURIComponent(launch.suite)}`;
  return (
    <div data-testid="launch-history">
      {data.epochs.length > 0 && (
        <ul className="epoch-lines">
          {data.epochs.map((e) => (
            <EpochLine key={e.epoch_id} e={e} ended={ended} />
          ))}
        </ul>
      )}
      {data.page.total > data.epochs.length && (
        <p className="muted small" data-testid="older-epochs">
          The newest {data.epochs.length} of its {data.page.total} epochs; the others are on the{" "}
          <a href={runsHref}>Runs</a> screen.
        </p>
      )}
      {runs.length > 0 && (
        <table className="table compact" data-testid="finished-runs">
          <thead>
            <tr>
              <th>Epoch</th>
              <th>Task</th>
              <th>Status</th>
              <th className="num">Loss</th>
              <th className="num">Time</th>
            </tr>
          </thead>
          <tbody>
            {listed.map((r) => (
              <tr key={r.id}>
                <td>{r.epoch_num}</td>
                <td>
                  <a href={`#/runs/run/${r.id}`}>{r.task}</a>
                </td>
                <td>
                  {ended && r.status === "running" ? (
                    // Its process stopped before the run recorded an end
                    // (killed, the machine went down): not running any more.
                    <span className="badge status-cancelled" data-testid="run-interrupted" title="Its process stopped before the run recorded an end; the suite's next launch runs it again">
                      interrupted
                    </span>
                  ) : (
                    <Status status={r.status} />
                  )}
                </td>
                <td className="num">{fmtLoss(r.loss)}</td>
                <td className="num">{fmtDuration(r.duration_ms)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {runs.length > RUNS_SHOWN && (
        <p className="muted small" data-testid="runs-cut">
          {more ? `All ${runs.length} runs` : `The latest ${RUNS_SHOWN} of ${runs.length} runs`} of these epochs.{" "}
          <button className="link" onClick={() => setMore(!more)} data-testid="runs-more">
            {more ? "Show fewer" : "Show all"}
          </button>
        </p>
      )}
    </div>
  );
}
