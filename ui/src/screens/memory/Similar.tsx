// "Past trajectories like this one" on the Memory screen: the question
// (a trajectory or a described task) and the answer.
import { useEffect, useRef, useState, type FormEvent } from "react";
import { go } from "../../App";
import { ErrorNote, Status } from "../../components/common";
import type { SimilarTrajectories } from "../../generated/SimilarTrajectories";
import { fmtTime } from "../../lib/format";
import { memoryHash, type MemoryRoute } from "../../lib/memory";
import { RateBar } from "./Stats";

export function SimilarCard({ route, answer, error }: { route: MemoryRoute; answer: SimilarTrajectories | null; error: string | null }) {
  const [text, setText] = useState(route.task ?? "");
  useEffect(() => setText(route.task ?? ""), [route.task]);
  const asked = route.trajectory !== undefined || route.run !== undefined || route.task !== undefined;
  const card = useRef<HTMLDivElement>(null);
  // Arriving with a question (from a run's page, or a memory's "similar…"): show the answer.
  const askedKey = `${route.trajectory}|${route.run}|${route.task}`;
  useEffect(() => {
    if (asked) card.current?.scrollIntoView?.({ block: "start" });
  }, [askedKey, asked]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const task = text.trim();
    go(memoryHash({ category: route.category, task: task || undefined }));
  };
  const clear = memoryHash({ category: route.category });
  return (
    <div className="card" data-testid="similar" ref={card}>
      <header className="screen-head">
        <h3>Similar trajectories</h3>
        {route.trajectory && (
          <span className="muted">
            like trajectory <code data-testid="similar-to">{route.trajectory}</code>
          </span>
        )}
        {route.run !== undefined && !route.trajectory && (
          <span className="muted">
            like <a href={`#/runs/run/${route.run}`}>run {route.run}</a>
          </span>
        )}
        <span className="spacer" />
        <form className="inline-form similar-form" onSubmit={submit}>
          <input
            aria-label="describe a task"
            placeholder="describe a task to compare with"
            value={text}
            onChange={(e) => setText(e.target.value)}
          />
          <button type="submit" disabled={!text.trim()}>
            Find
          </button>
          {asked && (
            <a className="button" href={clear}>
              Clear
            </a>
          )}
        </form>
      </header>
      <ErrorNote error={error} />
      {!asked && (
        <p className="muted small">
          Finished trajectories ranked by the keywords their task shares with a described one — or use “similar…” on a
          memory below or on a trajectory of a run's page.
        </p>
      )}
      {asked && !answer && !error && <p className="muted">Looking…</p>}
      {answer && <SimilarAnswer answer={answer} />}
    </div>
  );
}

export function SimilarAnswer({ answer }: { answer: SimilarTrajectories }) {
  return (
    <>
      <p>
        <span className="muted">task compared:</span> <q data-testid="similar-description">{answer.description}</q>
        {answer.category && (
          <span className="muted">
            {" "}
            · category <b>{answer.category}</b>
          </span>
        )}
      </p>
      <p className="muted small">similarity: {answer.measure}</p>
      {answer.items.length === 0 ? (
        <p className="muted" data-testid="similar-none">
          No finished trajectory shares a keyword with this task.
        </p>
      ) : (
        <table className="table compact" data-testid="similar-table">
          <thead>
            <tr>
              <th>similarity</th>
              <th>task</th>
              <th>category</th>
              <th>outcome</th>
              <th className="num">iterations</th>
              <th className="num">level</th>
              <th>shared words</th>
              <th>finished</th>
            </tr>
          </thead>
          <tbody>
            {answer.items.map((s) => {
              const t = s.trajectory;
              return (
                <tr key={t.id} data-trajectory={t.id} data-run={t.run_id}>
                  <td>
                    <RateBar rate={s.similarity} />
                  </td>
                  <td title={t.description ?? undefined}>
                    <a href={`#/runs/run/${t.run_id}`}>{t.task_name}</a> <span className="muted small">{t.id}</span>
                  </td>
                  <td>{t.category}</td>
                  <td>
                    <Status status={t.status} />
                  </td>
                  <td className="num">{t.iterations}</td>
                  <td className="num">{t.final_level?.toFixed(2) ?? "–"}</td>
                  <td className="small">{s.shared_words.join(", ")}</td>
                  <td className="small">{fmtTime(t.finished_at)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </>
  );
}
