// The convergence memories on the Memory screen: what each finished
// trajectory left for the next ones of its category.
import { Status } from "../../components/common";
import type { MemoryItem } from "../../generated/MemoryItem";
import { fmtTime } from "../../lib/format";
import { ATTRACTOR_COLORS, codeSpans, memoryDetails, memoryHash, words, type MemoryRoute } from "../../lib/memory";

export function AttractorPath({ path }: { path: string[] }) {
  return (
    <span className="attractor-path">
      {path.map((a, i) => (
        <span key={i}>
          {i > 0 && <span className="muted"> → </span>}
          <span className="attractor-dot" style={{ background: ATTRACTOR_COLORS[a] ?? "var(--muted)" }} />
          {words(a)}
        </span>
      ))}
    </span>
  );
}

/** Text whose `backquoted` names (overseers, checks) show as code. */
export function Code({ text }: { text: string }) {
  return (
    <>
      {codeSpans(text).map((part, i) => (i % 2 ? <code key={i}>{part}</code> : part))}
    </>
  );
}

export function MemoryList({ items, route, total }: { items: MemoryItem[]; route: MemoryRoute; total: number }) {
  if (total === 0)
    return <p className="muted" data-testid="no-memories">No memory yet{route.category ? ` in ${route.category}` : ""}: they are written when agent runs end.</p>;
  if (items.length === 0) return <p className="muted">None of this outcome among them.</p>;
  return (
    <div className="memories" data-testid="memories">
      {items.map((m) => (
        <MemoryEntry key={m.id} m={m} route={route} />
      ))}
    </div>
  );
}

export function MemoryEntry({ m, route }: { m: MemoryItem; route: MemoryRoute }) {
  const d = memoryDetails(m.details);
  const list = (xs: string[]) => xs.map(words).join(" → ");
  return (
    <article className={`memory ${m.outcome}`} data-testid="memory" data-outcome={m.outcome} data-category={m.category} data-trajectory={m.trajectory_id}>
      <header>
        <span className={`badge outcome-${m.outcome}`}>{m.outcome}</span>
        <a href={`#/runs/run/${m.run_id}`} title={`run ${m.run_id}, trajectory ${m.trajectory_id}`}>
          <b>{m.task_name}</b>
        </a>
        <span className="badge">{m.category}</span>
        <Status status={m.status} />
        <span className="muted small">
          {m.iterations} iteration{m.iterations === 1 ? "" : "s"} · level {m.final_level.toFixed(2)} · {m.tokens_used} tokens
          {d.complexity && ` · ${d.complexity}`}
        </span>
        <span className="spacer" />
        <span className="muted small">{fmtTime(m.created_at)}</span>
        <a className="small" href={memoryHash({ category: route.category, trajectory: m.trajectory_id })} data-testid="memory-similar">
          similar…
        </a>
      </header>
      <dl className="memory-facts">
        {m.outcome === "success" ? (
          <>
            <dt>worked</dt>
            <dd>{d.effective.length ? list(d.effective) : m.iterations <= 1 ? "the first attempt" : "no single attempt stood out"}</dd>
          </>
        ) : (
          <>
            <dt>tried</dt>
            <dd>{d.strategies.length ? list(d.strategies) : "–"}</dd>
          </>
        )}
        {d.attractorPath.length > 0 && (
          <>
            <dt>path</dt>
            <dd>
              <AttractorPath path={d.attractorPath} />
            </dd>
          </>
        )}
        {d.escapes.length > 0 && (
          <>
            <dt>escaped</dt>
            <dd>{d.escapes.map((e) => `${words(e.from)} by ${words(e.strategy)} (→ ${words(e.to)})`).join("; ")}</dd>
          </>
        )}
        {d.signals.length > 0 && (
          <>
            <dt>signals</dt>
            <dd>
              <Code text={d.signals.join("; ")} />
            </dd>
          </>
        )}
        {d.causes.length > 0 && (
          <>
            <dt>why</dt>
            <dd>
              <Code text={d.causes.join("; ")} />
            </dd>
          </>
        )}
        {d.gaps.length > 0 && (
          <>
            <dt>still open</dt>
            <dd>
              <Code text={d.gaps.join("; ")} />
            </dd>
          </>
        )}
        {d.blockedTools.length > 0 && (
          <>
            <dt>blocked</dt>
            <dd>{d.blockedTools.join(", ")}</dd>
          </>
        )}
      </dl>
      <details>
        <summary className="small">as stored</summary>
        <p className="small memory-content">{m.content}</p>
      </details>
    </article>
  );
}
