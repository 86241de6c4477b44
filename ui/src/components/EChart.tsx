// A thin React wrapper around one ECharts instance: created once, options
// replaced on change, resized with its container, disposed on unmount.
//
// Only the chart types and components the app uses are registered, which
// keeps the bundle a third of the full library. Each instance is also listed
// in `window.attractorCharts` under its id, for automation and debugging
// (the end-to-end tests read point positions from it).
import { useEffect, useRef } from "react";
import * as echarts from "echarts/core";
import { BarChart, GraphChart, LineChart, ScatterChart, TreeChart } from "echarts/charts";
import { DataZoomComponent, GridComponent, LegendComponent, TooltipComponent } from "echarts/components";
import { CanvasRenderer } from "echarts/renderers";

echarts.use([LineChart, ScatterChart, BarChart, TreeChart, GraphChart, GridComponent, TooltipComponent, LegendComponent, DataZoomComponent, CanvasRenderer]);

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
  /** Charts of one group zoom together (ECharts' `connect`): their epoch columns stay aligned. */
  group?: string;
  option: echarts.EChartsCoreOption;
  height?: number;
  points?: number;
  onClick?: (e: ChartClick) => void;
  dark?: boolean;
}

export function EChart({ id, group, option, height = 320, points, onClick, dark }: Props) {
  const el = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);
  const clickRef = useRef(onClick);
  clickRef.current = onClick;

  useEffect(() => {
    if (!el.current) return;
    const c = echarts.init(el.current, dark ? "dark" : undefined, { renderer: "canvas" });
    chart.current = c;
    c.on("click", (p) => clickRef.current?.(p as unknown as ChartClick));
    if (group) {
      c.group = group;
      echarts.connect(group);
    }
    window.attractorCharts = { ...(window.attractorCharts ?? {}), [id]: c };
    const ro = new ResizeObserver(() => c.resize());
    ro.observe(el.current);
    return () => {
      ro.disconnect();
      if (window.attractorCharts?.[id] === c) delete window.attractorCharts[id];
      c.dispose();
      chart.current = null;
    };
  }, [id, group, dark]);

  useEffect(() => {
    chart.current?.setOption({ backgroundColor: "transparent", ...option }, { notMerge: true });
  }, [option, dark]);

  return <div ref={el} className="chart" data-testid={id} data-points={points} style={{ height }} />;
}
