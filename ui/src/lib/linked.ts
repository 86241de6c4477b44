// Charts that share an epoch axis, linked by epoch rather than by data index.
//
// ECharts' own `connect` replays a tooltip in the other charts at the same
// *data index* of the same series. That is only right when every series has
// one point per column: the artifact timeline has one point per artifact
// change, so hovering epoch 6 on the loss curve showed the sixth change, of a
// later epoch. Here a pointer on a column is sent to the other charts as that
// column, and each chart says where its own tooltip goes for it (or that it
// has nothing there). Zooming is shared the same way.
import type { ECharts } from "echarts/core";

/**
 * Where a chart shows its tooltip for a column: a series' data item, the
 * column itself (`"axis"`: an axis-triggered chart's tooltip at that x, even
 * where a series has no value), or nowhere.
 */
export type Tip = { seriesIndex: number; dataIndex: number } | "axis" | null;

interface Member {
  chart: ECharts;
  tipAt: (column: number) => Tip;
  /** The column this chart last pointed the others at, to send each once. */
  last: number | null;
}

const groups = new Map<string, Set<Member>>();

/** Actions sent to the other charts fire no events, so nothing echoes back. */
const quiet = { silent: true } as const;

function others(group: string, from: Member): Member[] {
  return [...(groups.get(group) ?? [])].filter((m) => m !== from && !m.chart.isDisposed());
}

/** The action that shows `m`'s tooltip for `column` (or hides it). */
function tipAction(m: Member, column: number | null): { type: string; [key: string]: unknown } {
  const tip = column === null ? null : m.tipAt(column);
  if (tip === "axis" && column !== null) {
    const x = m.chart.convertToPixel({ xAxisIndex: 0 }, column);
    if (typeof x === "number" && Number.isFinite(x)) return { type: "showTip", x, y: m.chart.getHeight() / 2 };
    return { type: "hideTip" };
  }
  return tip && tip !== "axis" ? { type: "showTip", ...tip } : { type: "hideTip" };
}

/** Shows `column` (nothing, for `null`) in every chart of the group but `from`'s. */
function pointAt(group: string, from: Member, column: number | null) {
  if (from.last === column) return;
  from.last = column;
  for (const m of others(group, from)) m.chart.dispatchAction(tipAction(m, column), quiet);
}

type AxisPointerEvent = { axesInfo?: { axisDim: string; value: number }[] };
type ItemEvent = { value?: unknown };
type ZoomEvent = { start?: number; end?: number; batch?: { start?: number; end?: number }[] };

/**
 * Adds `chart` to `group`; `tipAt` says where its tooltip goes for a column.
 * Returns the function that takes it out again (hiding what it showed).
 */
export function link(group: string, chart: ECharts, tipAt: (column: number) => Tip): () => void {
  const member: Member = { chart, tipAt, last: null };
  if (!groups.has(group)) groups.set(group, new Set());
  groups.get(group)?.add(member);

  // An axis-triggered chart reports the column under the pointer (the value
  // of a category axis is the column's index); none when it leaves the grid.
  chart.on("updateAxisPointer", (e) => {
    const x = (e as AxisPointerEvent).axesInfo?.find((a) => a.axisDim === "x");
    pointAt(group, member, x ? x.value : null);
  });
  // An item-triggered chart (the timeline) reports the column of the item
  // under the pointer — its value's first entry — and none when it leaves it.
  chart.on("mouseover", (e) => {
    const v = (e as ItemEvent).value;
    if (Array.isArray(v) && typeof v[0] === "number") pointAt(group, member, v[0]);
  });
  chart.on("mouseout", () => pointAt(group, member, null));
  chart.on("globalout", () => pointAt(group, member, null));
  chart.on("datazoom", (e) => {
    const z = e as ZoomEvent;
    const { start, end } = z.batch?.[0] ?? z;
    if (start === undefined || end === undefined) return;
    for (const m of others(group, member)) m.chart.dispatchAction({ type: "dataZoom", start, end }, quiet);
  });
  return () => {
    pointAt(group, member, null);
    groups.get(group)?.delete(member);
  };
}
