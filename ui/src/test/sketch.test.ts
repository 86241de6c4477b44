import { describe, expect, it } from "vitest";
import { niceStep, sketchable, valueTicks } from "../lib/sketch";
import { lossAxisMax } from "../lib/charts";

describe("a first frame's value axis", () => {
  it("steps by 1, 2, 3, 5 or 10 times a power of ten, as ECharts does", () => {
    expect(niceStep(0.06)).toBe(0.05);
    expect(niceStep(0.0123)).toBe(0.01);
    expect(niceStep(0.034)).toBe(0.03);
    expect(niceStep(0.21)).toBe(0.2);
    expect(niceStep(7.5)).toBe(10);
    expect(niceStep(1400)).toBe(1000);
  });

  it("rounds a scaled axis' ends out to a step, around the data only", () => {
    expect(valueTicks([0.215, 0.27, 0.405], true)).toEqual([0.21, 0.24, 0.27, 0.3, 0.33, 0.36, 0.39, 0.42]);
  });

  it("starts an unscaled axis at zero", () => {
    expect(valueTicks([3, 9], false)).toEqual([0, 2, 4, 6, 8, 10]);
  });

  it("tops a loss axis at 1 when its losses come near it (the loss charts' rule)", () => {
    expect(valueTicks([0.05, 0.9], true, lossAxisMax)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
  });

  it("gives flat data room above and below", () => {
    const ticks = valueTicks([0.5, 0.5], true);
    expect(ticks[0]).toBeLessThan(0.5);
    expect(ticks[ticks.length - 1]).toBeGreaterThan(0.5);
  });

  it("ends on data a rounding error apart (a mean of three equal losses)", () => {
    const ticks = valueTicks([0.1, (0.1 + 0.1 + 0.1) / 3], true);
    expect(ticks.length).toBeGreaterThan(1);
    expect(ticks.length).toBeLessThan(20);
    expect(ticks[0]).toBeLessThan(0.1);
  });

  it("has an axis even without a single value", () => {
    expect(valueTicks([], true)).toEqual([0, 1]);
  });
});

describe("what a first frame can draw", () => {
  const base = { grid: { left: 130, right: 20, top: 36, bottom: 56 }, xAxis: { type: "category", data: ["1", "2"] }, yAxis: { type: "value" } };
  it("draws lines, points and box plots over a category axis", () => {
    expect(sketchable({ ...base, series: [{ type: "line", data: [1, 2] }, { type: "scatter", data: [[0, 1]] }, { type: "boxplot", data: [[0, 1, 2, 3, 4]] }] })).toEqual({ from: 0, to: 1 });
  });
  it("leaves other charts to ECharts", () => {
    expect(sketchable({ ...base, series: [{ type: "graph", data: [] }] })).toBeNull();
    expect(sketchable({ ...base, xAxis: { type: "value" }, series: [{ type: "line", data: [] }] })).toBeNull();
    expect(sketchable({ ...base, series: [] })).toBeNull();
    expect(sketchable({})).toBeNull();
  });
  it("opens on the columns of its zoom window, as ECharts maps the percentages", () => {
    const labels = Array.from({ length: 500 }, (_, i) => String(i + 1));
    const o = { ...base, xAxis: { type: "category", data: labels }, dataZoom: [{ type: "inside", start: 80, end: 100 }], series: [{ type: "line", data: [] }] };
    expect(sketchable(o)).toEqual({ from: 399, to: 499 });
  });
});
