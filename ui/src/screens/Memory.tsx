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
import { useEffect, useMemo, useState } from "react";
import { api } from "../api";
import { go, useLive } from "../App";
import { Empty, ErrorNote } from "../components/common";
import type { SimilarTrajectories } from "../generated/SimilarTrajectories";
import { memoryHash, readMemoryRoute, similarRequest } from "../lib/memory";
import { useLiveQuery } from "../lib/query";
import { useDark } from "../lib/theme";
import { MemoryList } from "./memory/Memories";
import { SimilarCard } from "./memory/Similar";
import { AttractorChart, CategoryTable, ComplexityChart, NothingYet, StrategyTables, Summary } from "./memory/Stats";

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
  const allStats = useLiveQuery(["trajectory-stats", "all"], tick, () => api.trajectory_stats());
  const scopedStats = useLiveQuery(["trajectory-stats", "of", category], tick, () => api.trajectory_stats({ category }), !!category);
  const all = allStats.data;
  const stats = category ? scopedStats.data : all;
  const statsError = allStats.error ?? (category ? scopedStats.error : null);

  const [limit, setLimit] = useState(MEMORY_PAGE);
  const [outcome, setOutcome] = useState<Outcome>("all");
  useEffect(() => setLimit(MEMORY_PAGE), [category]);
  // A longer page of the same category keeps the shorter one on screen while it loads.
  const memories = useLiveQuery(["memories", category ?? null, limit], tick, () => api.memories({ category, limit }), true, 2);
  const shownMemories = memories.data;
  const memoryError = memories.error;

  const similarReq = useMemo(() => similarRequest(route), [route]);
  const similarKey = similarReq ? JSON.stringify(similarReq) : null;
  const similarQuery = useLiveQuery(
    ["similar", similarKey],
    tick,
    () => (similarReq ? api.similar_trajectories({ request: similarReq }) : Promise.reject(new Error("nothing to compare"))),
    !!similarReq,
  );
  const similar: SimilarTrajectories | null = similarReq ? similarQuery.data : null;
  const similarError = similarReq ? similarQuery.error : null;

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
              answer={similar}
              error={similarError}
            />
          )}
        </>
      ) : (
        <>
          {stats && <Summary stats={stats} />}
          <SimilarCard
            route={route}
            answer={similar}
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
