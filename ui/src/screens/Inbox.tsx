// The interventions inbox: questions the system asks a person, with what
// happened, why it matters, the evidence and the proposed action; approve,
// reject, or answer with a hint. Below them the notices — intervention
// points in `notify` mode, which a run told a person and went on without
// waiting — until dismissed. Answered questions and dismissed notices stay
// as history. An artifact update held by the approval gate is a question
// with its own card (components/UpdateApproval): the diff, the evidence, and
// approve, edit or reject.
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api";
import { useLive } from "../App";
import { Commands } from "../components/Commands";
import { Empty, ErrorNote, Ticked } from "../components/common";
import { UpdateApproval } from "../components/UpdateApproval";
import type { AnswerKind } from "../generated/AnswerKind";
import type { Inbox as InboxData } from "../generated/Inbox";
import type { InterventionItem } from "../generated/InterventionItem";
import { fmtTime } from "../lib/format";
import { useLiveQuery } from "../lib/query";

/**
 * One request a card sends (an answer, a dismissal): busy while it runs,
 * its error shown in place, `done` after it succeeds.
 */
function useAction(done: () => void) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async (request: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await request();
      done();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, run };
}

function Question({ item, onAnswered }: { item: InterventionItem; onAnswered: () => void }) {
  const [hint, setHint] = useState("");
  const [hinting, setHinting] = useState(false);
  const { error, busy, run } = useAction(onAnswered);
  const send = (answer: AnswerKind) => run(() => api.answer({ id: item.id, request: { answer, text: answer === "hint" ? hint : undefined } }));
  const c = item.context;
  return (
    <div className="card question" data-testid="pending" data-id={item.id}>
      <header className="screen-head">
        <h3>
          <Ticked text={item.subject} />
        </h3>
        <span className="badge">{item.kind.replace("_", " ")}</span>
        {item.kind === "execution_approval" && (
          <a className="small" href="#/watch">
            watched folders
          </a>
        )}
      </header>
      <p className="muted small">
        #{item.id} · {item.task && <>task {item.task} · </>}
        {item.run_id !== null && (
          <>
            <a href={`#/runs/run/${item.run_id}`}>run {item.run_id}</a> ·{" "}
          </>
        )}
        {fmtTime(item.created_at)}
      </p>
      {c.what && (
        <p>
          <b>What:</b> {c.what}
        </p>
      )}
      {c.why && (
        <p>
          <b>Why it matters:</b> {c.why}
        </p>
      )}
      {c.commands.length > 0 && (
        <div className="approval-commands">
          <b>
            Approving allows exactly {c.commands.length === 1 ? "this command" : `these ${c.commands.length} commands`}, for this file
            content only:
          </b>
          <Commands commands={c.commands} />
        </div>
      )}
      {c.evidence !== null && c.evidence !== undefined && (
        <details>
          <summary>Evidence</summary>
          <pre className="output">{JSON.stringify(c.evidence, null, 2)}</pre>
        </details>
      )}
      {c.proposal && (
        <p className="proposal">
          <b>Proposed:</b> {c.proposal}
        </p>
      )}
      <ErrorNote error={error} />
      {hinting ? (
        <div className="hint-form">
          <textarea value={hint} onChange={(e) => setHint(e.target.value)} placeholder="Your hint for the next runs of this task" autoFocus />
          <div className="actions">
            <button onClick={() => setHinting(false)}>Back</button>
            <button className="primary" disabled={busy || !hint.trim()} onClick={() => send("hint")}>
              Send hint
            </button>
          </div>
        </div>
      ) : (
        <div className="actions">
          <button className="primary" disabled={busy} onClick={() => send("approve")}>
            Approve
          </button>
          <button disabled={busy} onClick={() => send("reject")}>
            Reject
          </button>
          {item.kind !== "execution_approval" && (
            <button disabled={busy} onClick={() => setHinting(true)}>
              Answer with a hint…
            </button>
          )}
        </div>
      )}
    </div>
  );
}

/** A notice: what happened and why it matters, the evidence, and Dismiss. */
function Notice({ item, onDismissed }: { item: InterventionItem; onDismissed: () => void }) {
  const { error, busy, run } = useAction(onDismissed);
  const dismiss = () => run(() => api.dismiss({ id: item.id }));
  const c = item.context;
  return (
    <div className="card notice-card" data-testid="notice" data-id={item.id}>
      <header className="screen-head">
        <h3>
          <Ticked text={item.subject} />
        </h3>
        <span className="badge">{item.kind.replaceAll("_", " ")}</span>
      </header>
      <p className="muted small">
        #{item.id} · {item.task && <>task {item.task} · </>}
        {item.run_id !== null && (
          <>
            <a href={`#/runs/run/${item.run_id}`}>run {item.run_id}</a> ·{" "}
          </>
        )}
        {fmtTime(item.created_at)} · the run went on without waiting
      </p>
      {c.what && <p>{c.what}</p>}
      {c.why && <p className="muted">{c.why}</p>}
      {c.evidence !== null && c.evidence !== undefined && (
        <details>
          <summary>Evidence</summary>
          <pre className="output">{JSON.stringify(c.evidence, null, 2)}</pre>
        </details>
      )}
      <ErrorNote error={error} />
      <div className="actions">
        <button disabled={busy} onClick={dismiss}>
          Dismiss
        </button>
      </div>
    </div>
  );
}

/**
 * What became of an answered question: a person's words for a question; for
 * a gated update the decision and the version it became ("approved your
 * edit → v5"), not the stored answer's shorthand.
 */
function Answered({ item }: { item: InterventionItem }) {
  const u = item.update;
  if (!u) {
    return (
      <>
        <b>{item.answer ?? item.status}</b>
        {item.answer_text && <> — {item.answer_text}</>}
      </>
    );
  }
  if (u.status === "rejected") {
    return (
      <>
        <b>rejected</b>
        {u.reason && <> — {u.reason}</>}
      </>
    );
  }
  return (
    <>
      <b>{u.edited ? "approved with your edit" : "approved"}</b>
      {u.applied_version !== null ? <> → became v{u.applied_version}</> : <span className="muted"> (applied when the run reaches it)</span>}
    </>
  );
}

export function Inbox({ onChange }: { onChange: () => void }) {
  const { tick } = useLive();
  const { data: inbox, error } = useLiveQuery<InboxData>(["interventions"], tick, () => api.interventions());
  const queries = useQueryClient();
  // An answer changes the inbox at once, before the live feed says so.
  const load = () => void queries.invalidateQueries({ queryKey: ["interventions"] });

  return (
    <section>
      <header className="screen-head">
        <h2>Interventions</h2>
      </header>
      <ErrorNote error={error} />
      {inbox && inbox.pending.length === 0 && (
        <Empty title="Nothing waits for an answer">
          <p>
            When a run needs a person — the model tier keeps failing, or a task finds no feasible point — its question appears here with
            the evidence and a proposed action. A file dropped into a watched folder asks here before it runs any command, and under{" "}
            <code>approve_updates</code> each artifact update an optimizer proposes waits here for your approval.
          </p>
        </Empty>
      )}
      {inbox?.pending.map((i) =>
        i.update ? (
          <UpdateApproval
            key={i.id}
            item={i}
            onDecided={() => {
              load();
              onChange();
            }}
          />
        ) : (
          <Question
            key={i.id}
            item={i}
            onAnswered={() => {
              load();
              onChange();
            }}
          />
        ),
      )}
      {inbox && inbox.notices.length > 0 && (
        <>
          <h3>Notices ({inbox.notices.length})</h3>
          <p className="muted small">
            What runs told you without stopping — a trajectory falling into a cycle or a plateau, a budget extended on its own — per the
            task's priority hint and the engine's <code>interventions</code> settings.
          </p>
          {inbox.notices.map((i) => (
            <Notice
              key={i.id}
              item={i}
              onDismissed={() => {
                load();
                onChange();
              }}
            />
          ))}
        </>
      )}
      {inbox && inbox.answered.length > 0 && (
        <>
          <h3>Answered and dismissed</h3>
          <table className="table compact" data-testid="answered">
            <thead>
              <tr>
                <th>#</th>
                <th>Question</th>
                <th>Answer</th>
                <th>When</th>
              </tr>
            </thead>
            <tbody>
              {inbox.answered.map((i) => (
                <tr key={i.id} data-id={i.id}>
                  <td>{i.id}</td>
                  <td>
                    <Ticked text={i.subject} />
                  </td>
                  <td>
                    <Answered item={i} />
                  </td>
                  <td className="small">{fmtTime(i.answered_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
