// Charts (seed 004 §11): LossCurve, ArtifactDeltaTimeline with its diff
// drawer, and PerTaskLossBoxplot, for one suite.
import { useEffect, useMemo, useState } from "react";
import { api, preloadedAnswer } from "../api";
import { useLive } from "../App";
import { DiffDrawer, type Transition } from "../components/DiffDrawer";
import { EChart, type ChartClick } from "../components/EChart";
import { ExampleFlips } from "../components/ExampleFlips";
import { Proposals } from "../components/Proposals";
import { Empty, ErrorNote, Status } from "../components/common";
import { boxplotOption, lossCurveOption, lossSummary, timelineOption, timelineTipAt } from "../lib/charts";
import { fmtLoss } from "../lib/format";
import { epochsVersion } from "../lib/live";
import { useLiveQuery } from "../lib/query";
import { useDark } from "../lib/theme";

export function Charts({ suite }: { suite?: string }) {
  const { tick, suiteChanges, reconnects } = useLive();
  const dark = useDark();
  const [open, setOpen] = useState<Transition | null>(null);

  const suites = useLiveQuery(["suites"], tick, () => api.suites()).data ?? [];

  // The charts are refetched when this suite's epochs may have changed, not
  // on every event: at 500 epochs a refetch and redraw is heavy (lib/live).
  const [suiteId, setSuiteId] = useState<number | undefined>(undefined);
  const version = epochsVersion(suiteChanges, reconnects, suite, suiteId);
  // Opened cold on this screen, the answer was fetched and parsed while the
  // app's code loaded (ui/index.html): drawn in the first render.
  const { data, error } = useLiveQuery(
    ["charts", suite],
    version,
    () => api.suite_charts({ key: suite ?? "" }),
    !!suite,
    undefined,
    () => (suite ? preloadedAnswer("suite_charts", { key: suite }) : undefined),
  );
  useEffect(() => setSuiteId(data?.suite.id), [data?.suite.id]);

  // A long history opens on its latest epochs (lib/charts, zoom). That view
  // is on screen before ECharts has loaded and run — each chart's first
  // frame (components/EChart, lib/sketch) — and ECharts draws the whole
  // history over it, opened on the same epochs.
  const lossOpt = useMemo(() => (data ? lossCurveOption(data) : {}), [data]);
  const timelineOpt = useMemo(() => (data ? timelineOption(data) : {}), [data]);
  const spreadOpt = useMemo(() => (data ? boxplotOption(data) : {}), [data]);
  const timelineTip = useMemo(() => (data ? (column: number) => timelineTipAt(data, column) : undefined), [data]);

  const onMark = (e: ChartClick) => {
    const v = e.value as [number, number, number];
    const m = Array.isArray(v) ? data?.marks[v[2]] : undefined;
    if (!m) return;
    setOpen({
      epoch: m.epoch,
      from: m.from,
      to: m.to,
      artifact: m.artifact,
      type: m.rollback ? "rollback" : "update",
      caption: m.rollback ? `Rolled back at the end of epoch ${m.epoch}${m.why}` : undefined,
    });
  };

  const picker = (
    <select value={suite ?? ""} onChange={(e) => (window.location.hash = `#/charts/${encodeURIComponent(e.target.value)}`)} aria-label="suite">
      <option value="" disabled>
        choose a suite…
      </option>
      {suites.map((s) => (
        <option key={s.id} value={s.name}>
          {s.name}
        </option>
      ))}
    </select>
  );

  if (!suite) {
    return (
      <section>
        <header className="screen-head">
          <h2>Charts</h2>
          {picker}
        </header>
        <Empty title="Pick a suite">
          <p>Choose a suite above, or open one from the Suites screen.</p>
        </Empty>
      </section>
    );
  }

  const loss = data?.loss ?? [];
  const completed = loss.length;
  const last = loss[loss.length - 1];
  return (
    <section>
      <header className="screen-head">
        <h2>
          Charts · <span data-testid="charts-suite">{suite}</span>
        </h2>
        {picker}
        {data && <Status status={data.suite.status} />}
        <span className="spacer" />
        <a className="button" href={`#/graph/${encodeURIComponent(suite)}`}>
          Graph
        </a>
        <a className="button" href={`#/runs/${encodeURIComponent(suite)}`}>
          Runs
        </a>
        {data?.suite.suite_path && (
          <a className="button" href={`#/launch?path=${encodeURIComponent(data.suite.suite_path)}&again=${encodeURIComponent(suite)}`}>
            Launch again
          </a>
        )}
      </header>
      <ErrorNote error={error} />
      {data && completed === 0 && (
        <Empty title="No finished epoch yet">
          <p>The charts fill in as epochs finish. Launch the suite, then watch it on the Live screen.</p>
        </Empty>
      )}
      {data && completed > 0 && (
        <>
          <div className="stats">
            <div>
              <span className="muted">epochs</span> <b>{completed}</b>
            </div>
            <div>
              <span className="muted">latest mean loss</span> <b>{fmtLoss(last?.loss)}</b>
            </div>
            <div>
              <span className="muted">best</span> <b>{fmtLoss(Math.min(...loss.map((p) => p.loss ?? Infinity)))}</b>
            </div>
            {last?.holdout !== null && (
              <div>
                <span className="muted holdout-text">held-out mean</span> <b>{fmtLoss(last?.holdout)}</b>
              </div>
            )}
            <div className="legend-note">
              dots: <span className="dot update" /> update <span className="dot rollback" /> rollback <span className="dot none" /> no change
            </div>
          </div>
          <div className="card">
            <h3>Loss curve</h3>
            <EChart
              id="loss-curve"
              group="suite-charts"
              resetKey={suite}
              option={lossOpt}
              label={lossSummary(loss)}
              points={loss.length}
              dark={dark}
            />
          </div>
          <div className="card">
            <h3>Artifact changes</h3>
            {data.marks.length === 0 && data.searched ? (
              <p className="muted" data-testid="tree-timeline-note">
                A tree search measured these epochs, one candidate each (point at the loss curve to see which versions): no
                epoch changes what is active. Its tree, and the versions it kept, are on the{" "}
                <a href={`#/graph/${encodeURIComponent(suite)}`}>Graph</a>.
              </p>
            ) : data.marks.length === 0 ? (
              <p className="muted">No artifact has changed yet. With the baseline optimizer nothing moves; launch with <code>evolve</code> to tune.</p>
            ) : (
              <EChart
                id="artifact-timeline"
                group="suite-charts"
                resetKey={suite}
                option={timelineOpt}
                label={`Artifact changes by epoch: ${data.marks.length} updates and rollbacks of ${data.rows.length} artifact${data.rows.length === 1 ? "" : "s"}; click one for its diff`}
                height={Math.max(140, 70 + data.rows.length * 36)}
                points={data.marks.length}
                tipAt={timelineTip}
                onClick={onMark}
                dark={dark}
              />
            )}
          </div>
          <div className="card">
            <h3>Per-task loss</h3>
            <EChart
              id="task-spread"
              group="suite-charts"
              resetKey={suite}
              option={spreadOpt}
              label={`Per-task loss by epoch: a box plot of the ${data.tasks.length} tasks' losses in each epoch`}
              points={data.spread.filter(Boolean).length}
              dark={dark}
            />
          </div>
          <div className="card">
            <h3>Proposals: predicted against observed</h3>
            <Proposals suite={data.suite.name} tick={version} />
          </div>
          <ExampleFlips key={data.suite.name} suite={data.suite.name} epochs={data.epochs} tick={version} />
        </>
      )}
      <DiffDrawer transition={open} onClose={() => setOpen(null)} />
    </section>
  );
}
