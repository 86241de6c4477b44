// ECharts with only the chart types and components the app draws registered
// (a third of the full library). Loaded on demand, not with the app's code
// (components/EChart.tsx, loadECharts): a page opened cold starts, and draws
// its charts' first frames (lib/sketch.ts), without waiting for its 650 KB.
import * as echarts from "echarts/core";
import { BarChart, BoxplotChart, GraphChart, LineChart, ScatterChart, TreeChart } from "echarts/charts";
import { DataZoomComponent, GridComponent, LegendComponent, MarkLineComponent, TooltipComponent } from "echarts/components";
import { CanvasRenderer } from "echarts/renderers";

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

export { echarts };
