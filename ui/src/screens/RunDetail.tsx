// One run: its loss breakdown, what it reported, stdout/stderr, and for
// optimize tasks and supervised agent tasks the ASO telemetry timeline (directive, source, LLM call,
// objective and violation per step), and for agent tasks the convergence
// engine's trajectories iteration by iteration.
import { useMemo, useRef } from "react";
import { api } from "../api";
import { useLive } from "../App";
import { EChart } from "../components/EChart";
import { ErrorNote, Status } from "../components/common";
import type { LossParts } from "../generated/LossParts";
import type { RunDetail } from "../generated/RunDetail";
import { referenceOf, telemetryLabels, telemetryOption } from "../lib/telemetry";
import { DIRECTIVE_SYMBOL, strategyCounts, trajectoryOption } from "../lib/trajectory";
import type { TrajectoryView } from "../generated/TrajectoryView";
import { fmtDuration, fmtLoss, fmtModelSpend, fmtTime } from "../lib/format";
import { useLiveQuery } from "../lib/query";
import { useDark } from "../lib/theme";

export function RunDetailScreen({ id }: { id: number }) {
  const dark = useDark();
  const valid = Number.isInteger(id);
  // A running run's detail keeps up with the live feed; an ended one is
  // read once, not again at every other run's end.
  const { tick } = useLive();
  const ended = useRef(false);
  const loaded = useLiveQuery<RunDetail>(["run", id], ended.current ? -1 : tick, () => api.run_detail({ id }), valid);
  ended.current = !!loaded.data && loaded.data.run.status !== "running";
  const d = loaded.data;
  const error = valid ? loaded.error : "no run id in the address";
  const option = useMemo(
    () => (d && d.telemetry.length ? telemetryOption(d.telemetry, d.run.kind, referenceOf(d.result)) : null),
    [d],
  );
  const labels = telemetryLabels(d?.run.kind ?? "");
  if (error) return <ErrorNote error={error} />;
  if (!d) return <p className="muted">Loading…</p>;
  const r = d.run;
  return (
    <section>
      <header className="screen-head">
        <h2>
          Run {r.id}: {r.task}
        </h2>
        <Status status={r.status} />
        {r.holdout && <span className="badge holdout">held out</span>}
        <span className="spacer" />
        <a className="button" href={`#/runs/${encodeURIComponent(d.suite)}`}>
          All runs of {d.suite}
        </a>
      </header>
      <div className="stats">
        <div>
          <span className="muted">epoch</span> <b>{r.epoch_num}</b>
        </div>
        <div>
          <span className="muted">loss</span> <b>{fmtLoss(r.loss)}</b>
        </div>
        <div>
          <span className="muted">kind</span> <b>{r.kind}</b>
        </div>
        <div>
          <span className="muted">time</span> <b>{fmtDuration(r.duration_ms)}</b>
        </div>
        <div>
          <span className="muted">started</span> {fmtTime(r.started_at)}
        </div>
        {r.exit_code !== null && (
          <div>
            <span className="muted">exit code</span> <b>{r.exit_code}</b>
          </div>
        )}
        {d.model && (
          <div data-testid="run-model">
            <span className="muted">model</span> {fmtModelSpend(d.model)}
          </div>
        )}
      </div>
      {r.error && <pre className="error">{r.error}</pre>}
      {r.parts && (
        <div className="card">
          <h3>Loss breakdown</h3>
          <p className="muted small">Each component is in [0, 1]; the loss is the sum of weight × component.</p>
          <div className="parts" data-testid="loss-parts">
            {(Object.keys(r.parts) as (keyof LossParts)[]).map((k) => {
              const v = r.parts![k];
              const w = r.weights?.[k];
              return (
                <div key={k}>
                  <span className="muted">{k.replace("_", " ")}</span>
                  <div className="part-bar">
                    <div style={{ width: `${Math.min(100, v * 100)}%` }} />
                  </div>
                  <b>{fmtLoss(v)}</b>
                  {w !== undefined && (
                    <span className="muted small">
                      {" "}
                      × {w} = {fmtLoss(v * w)}
                    </span>
                  )}
                </div>
              );
            })}
          </div>
        </div>
      )}
      {option && (
        <div className="card">
          <h3>ASO telemetry ({d.telemetry.length} steps)</h3>
          <EChart
            id="telemetry"
            option={option}
            label={`${labels.objective} and constraint violation of each trajectory, step by step: ${d.telemetry.length} steps; every step is in the table below`}
            points={d.telemetry.length}
            dark={dark}
          />
          <details>
            <summary>every step</summary>
            <table className="table compact" data-testid="telemetry-steps">
              <thead>
                <tr>
                  <th>traj</th>
                  <th>step</th>
                  <th>status</th>
                  <th className="num">{labels.objective}</th>
                  <th className="num">violation</th>
                  <th>directive</th>
                  <th>source</th>
                  <th>LLM</th>
                  <th className="num">{labels.evals}</th>
                </tr>
              </thead>
              <tbody>
                {d.telemetry.map((t, i) => (
                  <tr key={i}>
                    <td>{t.trajectory_id}</td>
                    <td>{t.step}</td>
                    <td>{t.status}</td>
                    <td className="num">{t.objective?.toPrecision(6) ?? "–"}</td>
                    <td className="num">
                      {(labels.agent ? t.max_violation?.toFixed(2) : t.max_violation?.toExponential(2)) ?? "–"}
                    </td>
                    <td>{t.directive_action}</td>
                    <td>{t.directive_source}</td>
                    <td>{t.llm_call_made ? "yes" : "no"}</td>
                    <td className="num">{t.evals_used}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </details>
        </div>
      )}
      {d.trajectories.map((t) => (
        <Trajectory key={t.id} t={t} dark={dark} />
      ))}
      <div className="card">
        <h3>stdout{d.stdout.truncated && <span className="muted small"> (last part)</span>}</h3>
        <pre className="output" data-testid="stdout">{d.stdout.text || "(nothing)"}</pre>
        <h3>stderr{d.stderr.truncated && <span className="muted small"> (last part)</span>}</h3>
        <pre className="output">{d.stderr.text || "(nothing)"}</pre>
        <p className="muted small">run directory: {d.run_dir}</p>
      </div>
      {d.result !== null && (
        <details className="card">
          <summary>reported result</summary>
          <pre className="output">{JSON.stringify(d.result, null, 2)}</pre>
        </details>
      )}
    </section>
  );
}

/** How a trajectory's role reads in its card's title. */
const ROLE: Record<string, string> = {
  parallel: "parallel group",
  sample: "sample",
  subtask: "subtask",
  integration: "integration",
};

function Trajectory({ t, dark }: { t: TrajectoryView; dark: boolean }) {
  const option = useMemo(() => trajectoryOption(t), [t]);
  return (
    <div className="card" data-testid="trajectory">
      <h3>
        Trajectory {t.id} <Status status={t.status} />
        {t.role !== "root" && (
          <span className="badge" data-testid="trajectory-role">
            {ROLE[t.role] ?? t.role}
            {t.ordinal > 0 && ` ${t.ordinal}`}
          </span>
        )}
        {t.parent_id && <span className="muted small"> under {t.parent_id}</span>}
        <a
          className="button small similar-link"
          href={`#/memory?trajectory=${encodeURIComponent(t.id)}`}
          title="finished trajectories of other runs whose task is most like this one's, with their outcome"
          data-testid="trajectory-similar"
        >
          Similar trajectories…
        </a>
      </h3>
      <div className="stats">
        <div>
          <span className="muted">iterations</span> <b>{t.iterations}</b>
        </div>
        <div>
          <span className="muted">final level</span> <b>{t.final_level?.toFixed(3) ?? "–"}</b>
        </div>
        <div>
          <span className="muted">tokens</span> <b>{t.tokens_used}</b>
        </div>
        {t.best_sequence !== null && (
          <div>
            <span className="muted">best iteration</span> <b>{t.best_sequence + 1}</b>
          </div>
        )}
        <div>
          <span className="muted">category</span> {t.category}
        </div>
        {t.pending_intervention_id !== null && (
          <div>
            <a href="#/inbox">waiting on question {t.pending_intervention_id}</a>
          </div>
        )}
        <div className="legend-note">
          strategies: {strategyCounts(t).map(([s, n]) => `${s} ×${n}`).join(", ")}
        </div>
      </div>
      {t.baseline && (
        <p className="small" data-testid="trajectory-baseline" title="the untouched workspace, measured before the first execution">
          <span className="muted">iteration 0 · baseline</span> {t.baseline.summary}
        </p>
      )}
      {t.observations.length > 0 && (
        <EChart
          id={`trajectory-${t.id}`}
          option={option}
          label={`Trajectory ${t.id}: its ${t.observations.length} observations step by step, with the directive of each`}
          points={t.observations.length}
          height={260}
          dark={dark}
        />
      )}
      <p className="muted small">
        symbols: {Object.entries(DIRECTIVE_SYMBOL).map(([d, sym]) => `${d} ${sym}`).join(" · ")}; a larger point is a
        forced strategy
      </p>
      <details>
        <summary>every iteration</summary>
        <table className="table compact" data-testid="trajectory-iterations">
          <thead>
            <tr>
              <th>#</th>
              <th>strategy</th>
              <th className="num">level</th>
              <th className="num">L</th>
              <th>attractor</th>
              <th>directive</th>
              <th>then</th>
              <th className="num">edits</th>
              <th className="num">tokens</th>
              <th>commit</th>
              <th>outcome</th>
            </tr>
          </thead>
          <tbody>
            {t.observations.map((o) => (
              <tr key={o.sequence} className={o.sequence === t.best_sequence ? "best-row" : ""}>
                <td>{o.sequence + 1}</td>
                <td>
                  {o.strategy}
                  {o.forced && <span className="muted small"> forced</span>}
                </td>
                <td className="num">{o.level.toFixed(3)}</td>
                <td className="num">{o.loss.toFixed(3)}</td>
                <td>{o.attractor}</td>
                <td title={o.rationale}>{o.directive}</td>
                <td>
                  {o.loop_control}
                  {o.next_strategy && <span className="muted small"> → {o.next_strategy}</span>}
                </td>
                <td className="num">
                  {o.applied_edits}
                  {o.rejected_edits > 0 && <span className="removed"> −{o.rejected_edits}</span>}
                </td>
                <td className="num">{o.tokens}</td>
                <td>
                  <code>{o.commit_id.slice(0, 8)}</code>
                </td>
                <td className="small">{o.verdict_summary}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </div>
  );
}
