// The trajectory repository's numbers on the Memory screen: convergence by
// category, iterations by complexity, strategies overall and per attractor.
import { useMemo } from "react";
import { EChart } from "../../components/EChart";
import { Empty } from "../../components/common";
import { useExample } from "../../lib/examples";
import { counted } from "../../lib/format";
import type { StrategyStats } from "../../generated/StrategyStats";
import type { TrajectoryStats } from "../../generated/TrajectoryStats";
import { ATTRACTOR_COLORS, attractorOption, complexityOption, pct, rankStrategies, rateColor, signed, strategyMatrix, totals, words } from "../../lib/memory";

export function NothingYet() {
  const example = useExample("agent.suite.yaml");
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
        <a href="#/settings">Settings</a> screen, then launch <code>{example}</code> from the{" "}
        <a href={`#/launch?path=${encodeURIComponent(example)}`}>Launch</a> screen, or from a terminal:
      </p>
      <pre>attractor run {example}</pre>
    </Empty>
  );
}

export function Summary({ stats }: { stats: TrajectoryStats }) {
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

export function RateBar({ rate, of }: { rate: number | null; of?: [number, number] }) {
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

export function CategoryTable({
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

export function ComplexityChart({ stats, dark }: { stats: TrajectoryStats; dark: boolean }) {
  const option = useMemo(() => complexityOption(stats.by_complexity), [stats]);
  return (
    <>
      <EChart
        id="iterations-by-complexity"
        option={option}
        label={`Mean iterations to the end of a trajectory for each of ${stats.by_complexity.length} complexity levels`}
        points={stats.by_complexity.length}
        height={220}
        dark={dark}
      />
      <p className="muted small">
        Mean iterations to the end, by the complexity SETUP sized the budget for, over how many finished trajectories.
      </p>
    </>
  );
}

export function AttractorChart({ stats, dark }: { stats: TrajectoryStats; dark: boolean }) {
  const option = useMemo(() => attractorOption(stats.attractors), [stats]);
  return (
    <>
      <EChart
        id="attractor-distribution"
        option={option}
        label={`Where finished trajectories ended: ${stats.attractors.map((a) => `${a.attractor} ${a.trajectories}`).join(", ") || "no trajectory yet"}`}
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

export function StrategyTables({ stats }: { stats: TrajectoryStats }) {
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

export function MatrixCell({ cell }: { cell: StrategyStats | undefined }) {
  if (!cell) return <td className="num muted">·</td>;
  const title = `${counted(cell.uses, "use")}, ${cell.measured} measured, ${counted(cell.successes, "success", "successes")}, mean Δ ${signed(cell.mean_delta)}`;
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
