// Charts that share an epoch axis, linked by epoch rather than by data index.
//
// ECharts' own `connect` replays a tooltip in the other charts at the same
// *data index* of the same series. That is only right when every series has
// one point per column: the artifact timeline has one point per artifact
// change, so hovering epoch 5 on the loss curve showed the fifth change, of
// some later epoch. Here a pointer on a column is sent to the other charts as
// that column, and each chart says where its own tooltip goes for it (or that
// it has nothing there). Zooming is shared the same way.
import type { ECharts } from "echarts/core";

/** Where a chart shows its tooltip: a series' data item, or nowhere. */
export type Tip = { seriesIndex: number; dataIndex: number } | null;

interface Member {
  chart: ECharts;
  tipAt: (column: number) => Tip;
}

const groups = new Map<string, Set<Member>>();

/** Actions sent to the other charts fire no events, so nothing echoes back. */
const quiet = { silent: true } as const;

function others(group: string, from: ECharts): Member[] {
  return [...(groups.get(group) ?? [])].filter((m) => m.chart !== from && !m.chart.isDisposed());
}

/** Shows `column` in every chart of the group but `from`. */
export function pointAt(group: string, from: ECharts, column: number | null) {
  for (const m of others(group, from)) {
    const tip = column === null ? null : m.tipAt(column);
    m.chart.dispatchAction(tip ? { type: "showTip", ...tip } : { type: "hideTip" }, quiet);
  }
}

type AxisPointerEvent = { axesInfo?: { axisDim: string; value: number }[] };
type ItemEvent = { value?: unknown };
type ZoomEvent = { start?: number; end?: number; batch?: { start?: number; end?: number }[] };

/**
 * Adds `chart` to `group`; `tipAt` says where its tooltip goes for a column.
 * Returns the function that takes it out again.
 */
export function link(group: string, chart: ECharts, tipAt: (column: number) => Tip): () => void {
  const member: Member = { chart, tipAt };
  if (!groups.has(group)) groups.set(group, new Set());
  groups.get(group)?.add(member);

  // An axis-triggered chart reports the column under the pointer (the value
  // of a category axis is the column's index).
  chart.on("updateAxisPointer", (e) => {
    const x = (e as AxisPointerEvent).axesInfo?.find((a) => a.axisDim === "x");
    if (x) pointAt(group, chart, x.value);
  });
  // An item-triggered chart (the timeline) reports the column of the item:
  // its value's first entry.
  chart.on("mouseover", (e) => {
    const v = (e as ItemEvent).value;
    if (Array.isArray(v) && typeof v[0] === "number") pointAt(group, chart, v[0]);
  });
  chart.on("globalout", () => pointAt(group, chart, null));
  chart.on("datazoom", (e) => {
    const z = e as ZoomEvent;
    const { start, end } = z.batch?.[0] ?? z;
    if (start === undefined || end === undefined) return;
    for (const m of others(group, chart)) m.chart.dispatchAction({ type: "dataZoom", start, end }, quiet);
  });
  return () => {
    groups.get(group)?.delete(member);
  };
}
