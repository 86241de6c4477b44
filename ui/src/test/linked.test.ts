import { describe, expect, it } from "vitest";
import type { ECharts } from "echarts/core";
import { link, type Tip } from "../lib/linked";

/** Just enough of an ECharts instance: handlers to fire, actions recorded. */
function fakeChart() {
  const handlers: Record<string, ((e: unknown) => void)[]> = {};
  const actions: { payload: Record<string, unknown>; opt: unknown }[] = [];
  let disposed = false;
  const chart = {
    on: (name: string, f: (e: unknown) => void) => (handlers[name] ??= []).push(f),
    dispatchAction: (payload: Record<string, unknown>, opt: unknown) => actions.push({ payload, opt }),
    isDisposed: () => disposed,
    convertToPixel: (_finder: unknown, column: number) => 100 + 10 * column,
    getHeight: () => 300,
  };
  const fire = (name: string, e: unknown = {}) => (handlers[name] ?? []).forEach((f) => f(e));
  return { chart: chart as unknown as ECharts, actions, fire, dispose: () => (disposed = true) };
}

describe("charts linked by epoch column", () => {
  it("shows the column another chart points at, each chart where its own tooltip goes, silently", () => {
    const [loss, timeline, spread] = [fakeChart(), fakeChart(), fakeChart()];
    const marks: Record<number, Tip> = { 2: { seriesIndex: 1, dataIndex: 0 } };
    const unlink = [
      link("g1", loss.chart, () => "axis"),
      link("g1", timeline.chart, (c) => marks[c] ?? null),
      link("g1", spread.chart, () => "axis"),
    ];
    loss.fire("updateAxisPointer", { axesInfo: [{ axisDim: "x", value: 2 }] });
    expect(timeline.actions.map((a) => a.payload)).toEqual([{ type: "showTip", seriesIndex: 1, dataIndex: 0 }]);
    expect(spread.actions.map((a) => a.payload)).toEqual([{ type: "showTip", x: 120, y: 150 }]);
    expect(loss.actions).toEqual([]);
    expect(timeline.actions[0].opt).toEqual({ silent: true });
    // The same column again sends nothing; a column without a mark hides the timeline's tooltip.
    loss.fire("updateAxisPointer", { axesInfo: [{ axisDim: "x", value: 2 }] });
    expect(spread.actions).toHaveLength(1);
    loss.fire("updateAxisPointer", { axesInfo: [{ axisDim: "x", value: 3 }] });
    expect(timeline.actions.at(-1)?.payload).toEqual({ type: "hideTip" });
    // Leaving the grid hides the others' tooltips.
    loss.fire("updateAxisPointer", { axesInfo: [] });
    expect(spread.actions.at(-1)?.payload).toEqual({ type: "hideTip" });
    unlink.forEach((u) => u());
  });

  it("reports an item chart's column from its value, and leaving an item hides the others", () => {
    const [loss, timeline] = [fakeChart(), fakeChart()];
    const unlink = [link("g2", loss.chart, () => "axis"), link("g2", timeline.chart, () => null)];
    timeline.fire("mouseover", { value: [4, 0, 7] });
    expect(loss.actions.at(-1)?.payload).toEqual({ type: "showTip", x: 140, y: 150 });
    timeline.fire("mouseout");
    expect(loss.actions.at(-1)?.payload).toEqual({ type: "hideTip" });
    unlink.forEach((u) => u());
  });

  it("zooms the others to the same window from an inside zoom or a slider, and skips disposed charts", () => {
    const [a, b, c] = [fakeChart(), fakeChart(), fakeChart()];
    const unlink = [link("g3", a.chart, () => "axis"), link("g3", b.chart, () => "axis"), link("g3", c.chart, () => "axis")];
    c.dispose();
    a.fire("datazoom", { batch: [{ start: 40, end: 90 }] });
    a.fire("datazoom", { start: 10, end: 60 });
    expect(b.actions.map((x) => x.payload)).toEqual([
      { type: "dataZoom", start: 40, end: 90 },
      { type: "dataZoom", start: 10, end: 60 },
    ]);
    expect(c.actions).toEqual([]);
    unlink.forEach((u) => u());
  });

  it("hides what a chart showed in the others when it leaves the group", () => {
    const [a, b] = [fakeChart(), fakeChart()];
    const unlinkA = link("g4", a.chart, () => "axis");
    const unlinkB = link("g4", b.chart, () => "axis");
    a.fire("updateAxisPointer", { axesInfo: [{ axisDim: "x", value: 1 }] });
    unlinkA();
    expect(b.actions.at(-1)?.payload).toEqual({ type: "hideTip" });
    unlinkB();
  });
});
