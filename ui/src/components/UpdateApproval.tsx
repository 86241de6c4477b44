// An artifact update the approval gate holds, as an Inbox card: what the
// optimizer proposes (the diff against the version it starts from), why (its
// rationale), on what evidence (the epoch's task losses) and what it
// predicts; a person approves it as proposed, edits it and approves the
// edit, or rejects it with a reason. What the run does meanwhile is said.
import { useState } from "react";
import { api } from "../api";
import type { InterventionItem } from "../generated/InterventionItem";
import type { UpdateReview } from "../generated/UpdateReview";
import { fmtLoss, fmtTime } from "../lib/format";
import { ErrorNote } from "./common";
import { DiffModeToggle, DiffView } from "./DiffView";

type Step = "review" | "edit" | "reject";

function Evidence({ u }: { u: UpdateReview }) {
  return (
    <div className="update-evidence">
      <p>
        <b>Predicted:</b>{" "}
        {u.expected_loss_reduction === null ? (
          <span className="muted">no prediction</span>
        ) : (
          <>
            loss down by <b data-testid="predicted">{fmtLoss(u.expected_loss_reduction)}</b>
          </>
        )}
        {u.confidence !== null && <span className="muted"> · confidence {Math.round(u.confidence * 100)}%</span>}
        {u.mean_loss !== null && (
          <span className="muted">
            {" "}
            · epoch {u.epoch_num} mean loss {fmtLoss(u.mean_loss)}
          </span>
        )}
      </p>
      {u.tasks.length > 0 && (
        <details>
          <summary>Evidence: the {u.tasks.length} training tasks' losses the optimizer saw</summary>
          <table className="table compact" data-testid="update-tasks">
            <thead>
              <tr>
                <th>Task</th>
                <th className="num">Loss</th>
              </tr>
            </thead>
            <tbody>
              {u.tasks.map((t) => (
                <tr key={t.task}>
                  <td>{t.task}</td>
                  <td className="num">{fmtLoss(t.loss)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </div>
  );
}

export function UpdateApproval({ item, onDecided }: { item: InterventionItem; onDecided: () => void }) {
  const u = item.update as UpdateReview;
  const [step, setStep] = useState<Step>("review");
  const [mode, setMode] = useState<"unified" | "split">("unified");
  const [edit, setEdit] = useState(u.proposed);
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const decide = async (request: Parameters<typeof api.decide_update>[0]["request"]) => {
    setBusy(true);
    setError(null);
    try {
      await api.decide_update({ id: item.id, request });
      onDecided();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="card question update-approval" data-testid="pending" data-kind="artifact_update" data-id={item.id}>
      <header className="screen-head">
        <h3 data-testid="update-title">
          Update <code>{u.artifact}</code>: v{u.parent_version} → {u.next_version !== null ? `v${u.next_version}` : "a new version"}?
        </h3>
        <span className="badge">artifact update</span>
        <a className="small" href={`#/artifacts/${encodeURIComponent(u.artifact)}`}>
          versions
        </a>
      </header>
      <p className="muted small">
        #{item.id} · suite <a href={`#/runs/${encodeURIComponent(u.suite)}`}>{u.suite}</a> · proposed by {u.optimizer} after epoch{" "}
        {u.epoch_num} · {fmtTime(item.created_at)} ·{" "}
        <span data-testid="meanwhile">
          {u.mode === "wait" ? "the run waits for your decision" : "the run goes on with the current version meanwhile"}
        </span>
      </p>
      <p>
        <b>Why:</b> {u.rationale}
      </p>
      <Evidence u={u} />
      {step === "edit" ? (
        <div className="update-edit">
          <label htmlFor={`edit-${item.id}`}>
            Your version of <code>{u.artifact}</code> (approving makes it the next version):
          </label>
          <textarea
            id={`edit-${item.id}`}
            className="code-edit"
            value={edit}
            onChange={(e) => setEdit(e.target.value)}
            rows={Math.min(20, Math.max(4, edit.split("\n").length + 1))}
            spellCheck={false}
            autoFocus
          />
        </div>
      ) : (
        <>
          <div className="diff-head">
            <b>
              The change ({u.diff.added} added, {u.diff.removed} removed)
            </b>
            <DiffModeToggle mode={mode} onChange={setMode} />
          </div>
          <DiffView diff={u.diff} mode={mode} />
        </>
      )}
      {step === "reject" && (
        <div className="hint-form">
          <textarea value={reason} onChange={(e) => setReason(e.target.value)} placeholder="Why not (kept with the decision; optional)" autoFocus />
        </div>
      )}
      <ErrorNote error={error} />
      <div className="actions">
        {step === "review" && (
          <>
            <button className="primary" disabled={busy} onClick={() => decide({ verdict: "approve" })}>
              Approve
            </button>
            <button disabled={busy} onClick={() => setStep("edit")}>
              Edit…
            </button>
            <button disabled={busy} onClick={() => setStep("reject")}>
              Reject…
            </button>
          </>
        )}
        {step === "edit" && (
          <>
            <button onClick={() => setStep("review")}>Back</button>
            <button className="primary" disabled={busy || !edit.trim()} onClick={() => decide({ verdict: "approve", content: edit })}>
              Approve my edit
            </button>
          </>
        )}
        {step === "reject" && (
          <>
            <button onClick={() => setStep("review")}>Back</button>
            <button className="danger" disabled={busy} onClick={() => decide({ verdict: "reject", reason: reason.trim() || undefined })}>
              Reject the update
            </button>
          </>
        )}
      </div>
    </div>
  );
}
