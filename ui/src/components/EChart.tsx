// A thin React wrapper around one ECharts instance: created once, options
// replaced on change, resized with its container, disposed on unmount.
//
// ECharts itself is loaded on demand (lib/echarts.ts, ~650 KB): until it is
// loaded — and, on a freshly loaded page, while its code runs for the first
// time — the chart shows a first frame drawn without it (lib/sketch.ts),
// which ECharts then draws over with its tooltips, zoom and legends. Each
// instance is also listed in `window.attractorCharts` under its id, for
// automation and debugging (the end-to-end tests read point positions from
// it). The chart's element gets `data-rendered-at` when its first data is on
// screen (the sketch or ECharts, whichever is first), `data-interactive-at`
// when ECharts has drawn it (tooltips and zoom work) and `data-settled-at`
// when its entry animation, if any, has played: the time since the page
// started loading, in ms (the UI benchmark reads the first two).
import { useEffect, useLayoutEffect, useRef, useState } from "react";
import type { ECharts, EChartsCoreOption } from "echarts/core";
import { link, type Tip } from "../lib/linked";
import { sketch } from "../lib/sketch";

type Library = typeof import("../lib/echarts");
let library: Library | null = null;
let loading: Promise<Library> | null = null;

/** ECharts, loaded once (the first chart to mount asks). */
export function loadECharts(): Promise<Library> {
  loading ??= import("../lib/echarts").then(
    (m) => (library = m),
    (e) => {
      // A later chart tries again (a new build replaced the file, say).
      loading = null;
      throw e;
    },
  );
  return loading;
}

/** ECharts once it is loaded; an error when it could not be. */
function useLibrary(): { lib: Library | null; failed: boolean } {
  const [lib, setLib] = useState(library);
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    if (lib) return;
    let live = true;
    loadECharts().then(
      (m) => live && setLib(m),
      () => live && setFailed(true),
    );
    return () => {
      live = false;
    };
  }, [lib]);
  return { lib, failed };
}

/** Runs `f` after the browser has painted what is on screen now. */
function afterPaint(f: () => void): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const frame = requestAnimationFrame(() => (timer = setTimeout(f, 0)));
  return () => {
    cancelAnimationFrame(frame);
    clearTimeout(timer);
  };
}

const stamp = (node: HTMLElement, key: "renderedAt" | "interactiveAt" | "settledAt") => {
  if (!node.dataset[key]) node.dataset[key] = String(Math.round(performance.now()));
};

declare global {
  interface Window {
    attractorCharts?: Record<string, ECharts>;
  }
}

export interface ChartClick {
  seriesName: string;
  value: unknown;
  dataIndex: number;
}

interface Props {
  id: string;
  /**
   * Charts of one group share an epoch axis: they zoom together, and pointing
   * at a column of one shows the same column's tooltip in the others.
   */
  group?: string;
  /** Where this chart's tooltip goes for a column another chart points at (default: its axis tooltip there). */
  tipAt?: (column: number) => Tip;
  /**
   * What the chart shows (a suite): a new key draws the chart afresh; a new
   * option under the same key updates it in place — no replayed entry
   * animation, and the reader's zoom is kept while a run adds epochs. Give
   * a key only where every series has an id and an update says everything.
   */
  resetKey?: string;
  option: EChartsCoreOption;
  /**
   * What the chart shows, in a sentence, for a reader who cannot see the
   * canvas (a screen reader announces it as an image with this text).
   */
  label: string;
  height?: number;
  points?: number;
  onClick?: (e: ChartClick) => void;
  dark?: boolean;
}

export function EChart({ id, group, tipAt, resetKey, option, label, height = 320, points, onClick, dark }: Props) {
  const { lib, failed } = useLibrary();
  const box = useRef<HTMLDivElement>(null);
  const el = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const [chart, setChart] = useState<ECharts | null>(null);
  // The first frame stays until ECharts has drawn over it.
  const [sketched, setSketched] = useState(true);
  const clickRef = useRef(onClick);
  clickRef.current = onClick;
  const tipRef = useRef(tipAt);
  tipRef.current = tipAt;
  // The key the chart was last drawn afresh for (null: not drawn yet).
  const drawnFor = useRef<string | null>(null);
  const resets = useRef(0);

  // The first frame, drawn once its size is known and before the browser
  // paints: what the chart shows until ECharts has drawn.
  const sketchedOnce = useRef(false);
  useLayoutEffect(() => {
    const node = box.current;
    if (sketchedOnce.current || !node || !canvas.current) return;
    sketchedOnce.current = true;
    // ECharts starts loading now, if no chart has asked yet.
    void loadECharts().catch(() => {});
    let columns = null;
    try {
      columns = sketch(canvas.current, option, node.clientWidth, height, dark);
    } catch {
      // A first frame is a courtesy: an option it trips on waits for ECharts.
    }
    if (!columns) return setSketched(false);
    // Which columns it shows (a long history's latest), for automation.
    node.dataset.firstFrame = `${columns.from}-${columns.to}`;
    stamp(node, "renderedAt");
  }, [option, height, dark]);

  useEffect(() => {
    const node = el.current;
    if (!lib || !node) return;
    let c: ECharts | null = null;
    let unlink: (() => void) | undefined;
    let ro: ResizeObserver | undefined;
    // After the first frame is on screen: ECharts' first run holds the page.
    const cancel = afterPaint(() => {
      const made = lib.echarts.init(node, dark ? "dark" : undefined, { renderer: "canvas" });
      c = made;
      made.on("click", (p) => clickRef.current?.(p as unknown as ChartClick));
      unlink = group ? link(group, made, (column) => (tipRef.current ? tipRef.current(column) : "axis")) : undefined;
      window.attractorCharts = { ...(window.attractorCharts ?? {}), [id]: made };
      // The observer also reports the size the chart was created with; only a
      // real change is worth a resize (each one redraws every point).
      ro = new ResizeObserver(() => {
        if (node.clientWidth !== made.getWidth() || node.clientHeight !== made.getHeight()) made.resize();
      });
      ro.observe(node);
      drawnFor.current = null;
      setChart(made);
    });
    return () => {
      cancel();
      unlink?.();
      ro?.disconnect();
      if (c && window.attractorCharts?.[id] === c) delete window.attractorCharts[id];
      c?.dispose();
      setChart(null);
    };
  }, [lib, id, group, dark]);

  useEffect(() => {
    const c = chart;
    if (!c) return;
    const full = { backgroundColor: "transparent", ...option };
    // Without a key every option is drawn afresh (the safe default: an
    // update merges, and keeps whatever the new option leaves unsaid).
    const key = resetKey ?? null;
    if (key === null || drawnFor.current !== key) {
      const outer = box.current;
      // An entry animation (a short history's) starts from nothing: the first
      // frame stays over it until it has played, or the data would vanish
      // and grow back.
      const animated = (full as { animation?: boolean }).animation !== false;
      const hide = () => {
        // Hidden at once (not at React's next render): never both at a time.
        if (canvas.current) canvas.current.style.display = "none";
        setSketched(false);
      };
      if (outer && !outer.dataset.settledAt) {
        const settled = () => {
          c.off("finished", settled);
          stamp(outer, "settledAt");
          if (animated) hide();
        };
        c.on("finished", settled);
      }
      c.setOption(full, { notMerge: true });
      // setOption has drawn it (or the first frame of its entry
      // animation): ECharts' from now on, tooltips and zoom with it. Not on
      // ECharts' "finished", which an empty chart reports right after init.
      if (outer && !outer.dataset.interactiveAt) {
        stamp(outer, "renderedAt");
        stamp(outer, "interactiveAt");
        if (!animated) hide();
      }
      drawnFor.current = key;
      resets.current += 1;
      if (outer) outer.dataset.resets = String(resets.current);
    } else {
      // An update: series are matched by id and morph to their new data;
      // the zoom window keeps where the reader put it.
      c.setOption(keepZoom(full), { replaceMerge: ["series"] });
    }
  }, [chart, option, resetKey]);

  return (
    <div
      ref={box}
      className="chart"
      data-testid={id}
      data-points={points}
      style={{ height }}
      role="img"
      aria-label={label}
    >
      <div ref={el} className="chart-echarts" />
      {sketched && <canvas ref={canvas} className="chart-sketch" aria-hidden="true" />}
      {failed && (
        <p className="chart-failed">
          The chart could not be drawn: its code did not load (the app may have been updated meanwhile). Reload the page.
        </p>
      )}
    </div>
  );
}

/** `option` without its zoom windows' positions, so an update keeps the reader's. */
function keepZoom(option: EChartsCoreOption): EChartsCoreOption {
  const zoom = option.dataZoom;
  if (!Array.isArray(zoom)) return option;
  return { ...option, dataZoom: zoom.map(({ start: _start, end: _end, ...rest }: Record<string, unknown>) => rest) };
}
