// Memory: what past agent runs teach (seed 002 Part 8 and §10.2). The
// trajectory repository's numbers — convergence rate by task category,
// iterations by complexity, how each strategy did (overall and per attractor
// it was chosen under), where trajectories ended — the convergence memories
// each finished trajectory left for the next ones of its category, and the
// past trajectories most like a given one or a described task.
//
// Everything here is read from the store as it is now and refetched when a
// run finishes; the filter and the similarity question live in the address
// (`#/memory?category=C&trajectory=ID`), so a run's page can link here.
import { useEffect, useMemo, useRef, useState, type FormEvent } from "react";
import { api } from "../api";
import { go, useLive } from "../App";
import { EChart } from "../components/EChart";
import { Empty, ErrorNote, Status } from "../components/common";
import type { MemoryItem } from "../generated/MemoryItem";
import type { SimilarTrajectories } from "../generated/SimilarTrajectories";
import type { StrategyStats } from "../generated/StrategyStats";
import type { TrajectoryStats } from "../generated/TrajectoryStats";
import { fmtTime } from "../lib/format";
import {
  ATTRACTOR_COLORS,
  attractorOption,
  codeSpans,
  complexityOption,
  memoryDetails,
  memoryHash,
  pct,
  rankStrategies,
  rateColor,
  readMemoryRoute,
  signed,
  similarRequest,
  strategyMatrix,
  totals,
  words,
  type MemoryRoute,
} from "../lib/memory";
import { useDark } from "../lib/theme";

/** Memories asked for at first, and how many more each "show more" asks for. */
const MEMORY_PAGE = 50;
/** The most the API gives in one answer. */
const MEMORY_MAX = 500;

type Outcome = "all" | "success" | "failure";

export function Memory({ query }: { query: URLSearchParams }) {
  const { tick } = useLive();
  const dark = useDark();
  const key = query.toString();
  const route = useMemo(() => readMemoryRoute(new URLSearchParams(key)), [key]);
  const { category } = route;

  // Every category's numbers (the category table and the filter's choices),
  // and, when filtered, the category's own.
  const [all, setAll] = useState<TrajectoryStats | null>(null);
  const [scoped, setScoped] = useState<TrajectoryStats | null>(null);
  const [statsError, setStatsError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    const fail = (e: Error) => live && setStatsError(e.message);
    api
      .trajectoryStats()
      .then((s) => {
        if (!live) return;
        setAll(s);
        setStatsError(null);
      })
      .catch(fail);
    if (category)
      api
        .trajectoryStats(category)
        .then((s) => live && setScoped(s))
        .catch(fail);
    return () => {
      live = false;
    };
  }, [category, tick]);
  const stats = category ? (scoped?.category === category ? scoped : null) : all;

  const [limit, setLimit] = useState(MEMORY_PAGE);
  const [memories, setMemories] = useState<{ category?: string; items: MemoryItem[] } | null>(null);
  const [memoryError, setMemoryError] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<Outcome>("all");
  useEffect(() => setLimit(MEMORY_PAGE), [category]);
  useEffect(() => {
    let live = true;
    api
      .memories(category, limit)
      .then((items) => {
        if (!live) return;
        setMemories({ category, items });
        setMemoryError(null);
      })
      .catch((e: Error) => live && setMemoryError(e.message));
    return () => {
      live = false;
    };
  }, [category, limit, tick]);
  const shownMemories = memories && memories.category === category ? memories.items : null;

  const similarReq = useMemo(() => similarRequest(route), [route]);
  const similarKey = similarReq ? JSON.stringify(similarReq) : null;
  const [similar, setSimilar] = useState<{ key: string; answer: SimilarTrajectories } | null>(null);
  const [similarError, setSimilarError] = useState<string | null>(null);
  useEffect(() => {
    setSimilarError(null);
    if (!similarReq || !similarKey) return;
    let live = true;
    api
      .similarTrajectories(similarReq)
      .then((answer) => live && setSimilar({ key: similarKey, answer }))
      .catch((e: Error) => {
        if (!live) return;
        setSimilar(null);
        setSimilarError(e.message);
      });
    return () => {
      live = false;
    };
    // similarReq is a function of similarKey: the key alone decides a refetch.
  }, [similarKey, tick]);

  const categories = useMemo(() => {
    const names = (all?.categories ?? []).map((c) => c.category);
    return category && !names.includes(category) ? [...names, category] : names;
  }, [all, category]);

  const nothingAtAll =
    all !== null && all.categories.length === 0 && all.strategies.length === 0 && shownMemories?.length === 0 && !category;

  const setCategory = (c: string | undefined) => go(memoryHash({ ...route, category: c }));

  return (
    <section className="memory-screen">
      <header className="screen-head">
        <h2>Memory</h2>
        <span className="muted">what finished agent trajectories teach the next ones</span>
        <span className="spacer" />
        {!nothingAtAll && (
          <label className="inline-label">
            <span className="muted small">task category</span>
            <select
              aria-label="task category"
              data-testid="category-filter"
              value={category ?? ""}
              onChange={(e) => setCategory(e.target.value || undefined)}
            >
              <option value="">every category</option>
              {categories.map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
          </label>
        )}
      </header>
      <ErrorNote error={statsError} />

      {nothingAtAll ? (
        <>
          <NothingYet />
          {similarReq && (
            <SimilarCard
              route={route}
              answer={similar && similar.key === similarKey ? similar.answer : null}
              error={similarError}
            />
          )}
        </>
      ) : (
        <>
          {stats && <Summary stats={stats} />}
          <SimilarCard
            route={route}
            answer={similar && similar.key === similarKey ? similar.answer : null}
            error={similarError}
          />
          {category && stats && stats.categories.length === 0 && stats.strategies.length === 0 && (
            <Empty title={`Nothing finished in category “${category}” yet`}>
              <p>
                A task's category is its <code>workflow:</code> (<code>general</code> without one). Its numbers appear here
                when one of its agent runs ends. <a href={memoryHash({ ...route, category: undefined })}>Every category</a>
              </p>
            </Empty>
          )}
          {stats && (stats.categories.length > 0 || stats.strategies.length > 0) && (
            <div className="memory-grid">
              <div className="card">
                <h3>Convergence by category</h3>
                <CategoryTable stats={all} selected={category} onPick={setCategory} />
              </div>
              <div className="card">
                <h3>Iterations by complexity</h3>
                {stats.by_complexity.length === 0 ? (
                  <p className="muted">No finished trajectory yet.</p>
                ) : (
                  <ComplexityChart stats={stats} dark={dark} />
                )}
              </div>
              <div className="card">
                <h3>Strategy effectiveness</h3>
                <StrategyTables stats={stats} />
              </div>
              <div className="card">
                <h3>Attractor distribution</h3>
                {stats.attractors.length === 0 ? (
                  <p className="muted">No finished trajectory yet.</p>
                ) : (
                  <AttractorChart stats={stats} dark={dark} />
                )}
              </div>
            </div>
          )}
          <div className="card" data-testid="memories-card">
            <header className="screen-head">
              <h3>Memories{category && <span className="muted"> of {category}</span>}</h3>
              <div className="toggle" role="group" aria-label="outcome">
                {(["all", "success", "failure"] as Outcome[]).map((o) => (
                  <button key={o} className={outcome === o ? "on" : ""} onClick={() => setOutcome(o)} data-testid={`outcome-${o}`}>
                    {o === "all" ? "all" : o === "success" ? "successes" : "failures"}
                    {shownMemories && o !== "all" && ` (${shownMemories.filter((m) => m.outcome === o).length})`}
                  </button>
                ))}
              </div>
              <span className="spacer" />
              {shownMemories && (
                <span className="muted small">
                  the newest {shownMemories.length}
                  {shownMemories.length >= limit ? "" : " (all there are)"}
                </span>
              )}
            </header>
            <p className="muted small">
              Each finished trajectory leaves one memory for its category: what made progress and the signals that
              moved, or where it got stuck and what stayed open. The next trajectory of the category recalls them: the
              strategies that worked get a head start, and its prompts say what worked and what failed before.
            </p>
            <ErrorNote error={memoryError} />
            {shownMemories && (
              <MemoryList
                items={shownMemories.filter((m) => outcome === "all" || m.outcome === outcome)}
                route={route}
                total={shownMemories.length}
              />
            )}
            {shownMemories && shownMemories.length >= limit && limit < MEMORY_MAX && (
              <button onClick={() => setLimit((l) => Math.min(MEMORY_MAX, l + MEMORY_PAGE * 2))}>Show older memories</button>
            )}
          </div>
        </>
      )}
    </section>
  );
}

function NothingYet() {
  return (
    <Empty title="Nothing remembered yet">
      <p>
        This screen fills in as <b>agent tasks</b> finish. Each agent run drives a trajectory of the convergence engine;
        when it ends it leaves a memory for its task category (the task's <code>workflow:</code>, <code>general</code>{" "}
        without one), and the numbers here add them up: how often each category converges, how many iterations tasks
        take by complexity, which strategies made progress, and where trajectories ended up.
      </p>
      <p>
        To fill it, run a suite with agent tasks — the example suite has two. Set a model on the{" "}
        <a href="#/settings">Settings</a> screen, then launch <code>examples/agent.suite.yaml</code> from the{" "}
        <a href="#/launch">Launch</a> screen, or from a terminal:
      </p>
      <pre>attractor run examples/agent.suite.yaml</pre>
    </Empty>
  );
}

function Summary({ stats }: { stats: TrajectoryStats }) {
  const t = totals(stats.categories);
  return (
    <div className="stats" data-testid="memory-summary">
      <div data-stat="finished">
        <span className="muted">finished trajectories</span> <b>{t.finished}</b>
      </div>
      <div data-stat="converged">
        <span className="muted">converged</span> <b>{t.converged}</b> <span className="muted">({pct(t.rate)})</span>
      </div>
      <div data-stat="partial">
        <span className="muted">accepted partial</span> <b>{t.acceptedPartial}</b>
      </div>
      <div data-stat="iterations">
        <span className="muted">mean iterations</span> <b>{t.meanIterations?.toFixed(1) ?? "–"}</b>
      </div>
      <div data-stat="tokens">
        <span className="muted">mean tokens</span> <b>{t.meanTokens === null ? "–" : Math.round(t.meanTokens)}</b>
      </div>
    </div>
  );
}

function RateBar({ rate, of }: { rate: number | null; of?: [number, number] }) {
  return (
    <span className="rate">
      <span className="rate-track">
        <span className="rate-fill" style={{ width: `${Math.round((rate ?? 0) * 100)}%` }} />
      </span>
      <span className="rate-text">{pct(rate)}</span>
      {of && (
        <span className="muted small">
          {of[0]}/{of[1]}
        </span>
      )}
    </span>
  );
}

function CategoryTable({
  stats,
  selected,
  onPick,
}: {
  stats: TrajectoryStats | null;
  selected?: string;
  onPick: (c: string | undefined) => void;
}) {
  if (!stats) return <p className="muted">Loading…</p>;
  if (stats.categories.length === 0) return <p className="muted">No finished trajectory yet.</p>;
  // Partial acceptances are rare: their column only when there is one.
  const partial = stats.categories.some((c) => c.accepted_partial > 0);
  return (
    <>
      <div className="table-wrap">
        <table className="table compact" data-testid="category-table">
          <thead>
            <tr>
              <th>category</th>
              <th className="num" title="finished trajectories">finished</th>
              <th title="converged of finished">converged</th>
              {partial && (
                <th className="num" title="ended with a good-enough result when the budget ran out">
                  partial
                </th>
              )}
              <th className="num" title="mean iterations">iter</th>
              <th className="num" title="mean tokens">tokens</th>
            </tr>
          </thead>
          <tbody>
            {stats.categories.map((c) => (
              <tr key={c.category} data-category={c.category} className={c.category === selected ? "active-row" : ""}>
                <td>
                  <button
                    className="link"
                    title={c.category === selected ? "show every category" : `only ${c.category}`}
                    onClick={() => onPick(c.category === selected ? undefined : c.category)}
                  >
                    {c.category}
                  </button>
                </td>
                <td className="num">{c.finished}</td>
                <td data-value={c.converged}>
                  <RateBar rate={c.convergence_rate} of={[c.converged, c.finished]} />
                </td>
                {partial && <td className="num">{c.accepted_partial}</td>}
                <td className="num">{c.mean_iterations.toFixed(1)}</td>
                <td className="num">{Math.round(c.mean_tokens)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p className="muted small">
        The convergence rate: finished trajectories that converged. With five or more finished, a category's rate
        widens or narrows the next trajectory's basin estimate. Click a category to see only it.
      </p>
    </>
  );
}

function ComplexityChart({ stats, dark }: { stats: TrajectoryStats; dark: boolean }) {
  const option = useMemo(() => complexityOption(stats.by_complexity), [stats]);
  return (
    <>
      <EChart id="iterations-by-complexity" option={option} points={stats.by_complexity.length} height={220} dark={dark} />
      <p className="muted small">
        Mean iterations to the end, by the complexity SETUP sized the budget for, over how many finished trajectories.
      </p>
    </>
  );
}

function AttractorChart({ stats, dark }: { stats: TrajectoryStats; dark: boolean }) {
  const option = useMemo(() => attractorOption(stats.attractors), [stats]);
  return (
    <>
      <EChart
        id="attractor-distribution"
        option={option}
        points={stats.attractors.length}
        height={Math.max(170, 70 + stats.attractors.length * 40)}
        dark={dark}
      />
      <p className="muted small">
        Where finished trajectories ended (the classification of their last iteration), and how often each attractor was
        met on the way. A fixed point is convergence; a plateau, limit cycle or divergence is a trap to escape.
      </p>
    </>
  );
}

function StrategyTables({ stats }: { stats: TrajectoryStats }) {
  const rows = rankStrategies(stats.strategies);
  const matrix = useMemo(() => strategyMatrix(stats.strategies_by_attractor), [stats]);
  if (rows.length === 0) return <p className="muted">No strategy has run yet.</p>;
  return (
    <>
      <div className="table-wrap">
        <table className="table compact" data-testid="strategy-table">
          <thead>
            <tr>
              <th>strategy</th>
              <th className="num" title="attempts it made">uses</th>
              <th title="successes of the measured attempts">success rate</th>
              <th className="num" title="mean change of the convergence level">mean Δ</th>
              <th className="num">tokens</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((s) => (
              <tr key={s.strategy} data-strategy={s.strategy}>
                <td>{words(s.strategy)}</td>
                <td className="num">{s.uses}</td>
                <td data-successes={s.successes} data-measured={s.measured}>
                  {s.success_rate === null ? (
                    <span className="muted small">unmeasured</span>
                  ) : (
                    <RateBar rate={s.success_rate} of={[s.successes, s.measured]} />
                  )}
                </td>
                <td className="num">{signed(s.mean_delta)}</td>
                <td className="num">{s.tokens}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p className="muted small">
        A success is an attempt that raised the convergence level by more than {stats.success_threshold}; a trajectory's
        first attempt has nothing before it and is not measured (successes/measured beside each rate).
      </p>
      <h4>By the attractor it was chosen under</h4>
      <div className="table-wrap">
        <table className="table compact matrix" data-testid="strategy-matrix">
          <thead>
            <tr>
              <th>strategy</th>
              {matrix.attractors.map((a) => (
                <th key={a} className="num">
                  <span className="attractor-dot" style={{ background: ATTRACTOR_COLORS[a] }} />
                  {words(a)}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {matrix.strategies.map((s) => (
              <tr key={s}>
                <td>{words(s)}</td>
                {matrix.attractors.map((a) => (
                  <MatrixCell key={a} cell={matrix.cell(s, a)} />
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p className="muted small">Each cell: success rate · successes/measured (hover for uses and the mean Δ).</p>
    </>
  );
}

function MatrixCell({ cell }: { cell: StrategyStats | undefined }) {
  if (!cell) return <td className="num muted">·</td>;
  const title = `${cell.uses} use(s), ${cell.measured} measured, ${cell.successes} success(es), mean Δ ${signed(cell.mean_delta)}`;
  return (
    <td className="num" title={title} style={{ background: rateColor(cell.success_rate) }} data-cell={`${cell.strategy}/${cell.attractor}`}>
      {cell.success_rate === null ? (
        <span className="muted">{cell.uses}× unmeasured</span>
      ) : (
        <>
          {pct(cell.success_rate)} <span className="muted">· {cell.successes}/{cell.measured}</span>
        </>
      )}
    </td>
  );
}

function AttractorPath({ path }: { path: string[] }) {
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
function Code({ text }: { text: string }) {
  return (
    <>
      {codeSpans(text).map((part, i) => (i % 2 ? <code key={i}>{part}</code> : part))}
    </>
  );
}

function MemoryList({ items, route, total }: { items: MemoryItem[]; route: MemoryRoute; total: number }) {
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

function MemoryEntry({ m, route }: { m: MemoryItem; route: MemoryRoute }) {
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

function SimilarCard({ route, answer, error }: { route: MemoryRoute; answer: SimilarTrajectories | null; error: string | null }) {
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

function SimilarAnswer({ answer }: { answer: SimilarTrajectories }) {
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
