// A thin React wrapper around one ECharts instance: created once, options
// replaced on change, resized with its container, disposed on unmount.
//
// Only the chart types and components the app uses are registered, which
// keeps the bundle a third of the full library. Each instance is also listed
// in `window.attractorCharts` under its id, for automation and debugging
// (the end-to-end tests read point positions from it). When a chart has
// finished drawing its first data, its element gets `data-rendered-at`: the
// time since the page started loading, in ms (the UI benchmark reads it).
import { useEffect, useRef } from "react";
import * as echarts from "echarts/core";
import { BarChart, BoxplotChart, GraphChart, LineChart, ScatterChart, TreeChart } from "echarts/charts";
import { DataZoomComponent, GridComponent, LegendComponent, MarkLineComponent, TooltipComponent } from "echarts/components";
import { CanvasRenderer } from "echarts/renderers";
import { link, type Tip } from "../lib/linked";

echarts.use([
  LineChart,
  ScatterChart,
  BarChart,
  BoxplotChart,
  TreeChart,
  GraphChart,
  GridComponent,
  TooltipComponent,
  LegendComponent,
  DataZoomComponent,
  MarkLineComponent,
  CanvasRenderer,
]);

declare global {
  interface Window {
    attractorCharts?: Record<string, echarts.ECharts>;
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
  option: echarts.EChartsCoreOption;
  /**
   * What the chart shows, in a sentence, for a reader who cannot see the
   * canvas (a screen reader announces it as an image with this text).
   */
  label: string;
  height?: number;
  points?: number;
  onClick?: (e: ChartClick) => void;
  /** Called each time the chart has finished drawing an option drawn afresh (a new `resetKey`). */
  onDrawn?: () => void;
  dark?: boolean;
}

export function EChart({ id, group, tipAt, resetKey, option, label, height = 320, points, onClick, onDrawn, dark }: Props) {
  const el = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);
  const clickRef = useRef(onClick);
  clickRef.current = onClick;
  const tipRef = useRef(tipAt);
  tipRef.current = tipAt;
  const drawnRef = useRef(onDrawn);
  drawnRef.current = onDrawn;
  // The key the chart was last drawn afresh for (null: not drawn yet).
  const drawnFor = useRef<string | null>(null);
  const resets = useRef(0);

  useEffect(() => {
    if (!el.current) return;
    const c = echarts.init(el.current, dark ? "dark" : undefined, { renderer: "canvas" });
    chart.current = c;
    drawnFor.current = null;
    c.on("click", (p) => clickRef.current?.(p as unknown as ChartClick));
    const node = el.current;
    const markRendered = () => {
      if (!node.dataset.renderedAt) node.dataset.renderedAt = String(Math.round(performance.now()));
      c.off("finished", markRendered);
    };
    c.on("finished", markRendered);
    const unlink = group ? link(group, c, (column) => (tipRef.current ? tipRef.current(column) : "axis")) : undefined;
    window.attractorCharts = { ...(window.attractorCharts ?? {}), [id]: c };
    // The observer also reports the size the chart was created with; only a
    // real change is worth a resize (each one redraws every point).
    const ro = new ResizeObserver(() => {
      if (node.clientWidth !== c.getWidth() || node.clientHeight !== c.getHeight()) c.resize();
    });
    ro.observe(el.current);
    return () => {
      unlink?.();
      ro.disconnect();
      if (window.attractorCharts?.[id] === c) delete window.attractorCharts[id];
      c.dispose();
      chart.current = null;
    };
  }, [id, group, dark]);

  useEffect(() => {
    const c = chart.current;
    if (!c) return;
    const full = { backgroundColor: "transparent", ...option };
    // Without a key every option is drawn afresh (the safe default: an
    // update merges, and keeps whatever the new option leaves unsaid).
    const key = resetKey ?? null;
    if (key === null || drawnFor.current !== key) {
      // Listening first: without animation ECharts draws, and reports it
      // has finished, inside setOption.
      const drawn = () => {
        c.off("finished", drawn);
        drawnRef.current?.();
      };
      c.on("finished", drawn);
      c.setOption(full, { notMerge: true });
      drawnFor.current = key;
      resets.current += 1;
      if (el.current) el.current.dataset.resets = String(resets.current);
    } else {
      // An update: series are matched by id and morph to their new data;
      // the zoom window keeps where the reader put it.
      c.setOption(keepZoom(full), { replaceMerge: ["series"] });
    }
  }, [option, dark, resetKey]);

  return <div ref={el} className="chart" data-testid={id} data-points={points} style={{ height }} role="img" aria-label={label} />;
}

/** `option` without its zoom windows' positions, so an update keeps the reader's. */
function keepZoom(option: echarts.EChartsCoreOption): echarts.EChartsCoreOption {
  const zoom = option.dataZoom;
  if (!Array.isArray(zoom)) return option;
  return { ...option, dataZoom: zoom.map(({ start: _start, end: _end, ...rest }: Record<string, unknown>) => rest) };
}
