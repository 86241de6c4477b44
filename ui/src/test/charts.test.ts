import { describe, expect, it } from "vitest";
import {
  COLORS,
  boxplotOption,
  calibrationOption,
  calibrationPoints,
  epochMove,
  lossCurveOption,
  lossPoints,
  median,
  movingAverage,
  spreadPoints,
  timelineMarks,
  timelineOption,
  zoom,
} from "../lib/charts";
import type { ProposalItem } from "../generated/ProposalItem";
import { epoch, rollback, update } from "./fixtures";

type Series = { name: string; data: unknown[]; lineStyle?: { type: string }; symbol?: string };
const series = (o: Record<string, unknown>) => o.series as Series[];
type Fmt = (p: { dataIndex: number }[]) => string;

describe("movingAverage", () => {
  it("averages a trailing window of three, partial at the start", () => {
    expect(movingAverage([3, 6, 9, 12])).toEqual([3, 4.5, 6, 9]);
  });
  it("skips missing values and gives null for a window without any", () => {
    expect(movingAverage([null, 2, null, 4, null, null, null])).toEqual([null, 2, 2, 3, 4, 4, null]);
  });
  it("takes other window sizes", () => {
    expect(movingAverage([1, 2, 3, 4], 2)).toEqual([1, 1.5, 2.5, 3.5]);
  });
});

describe("median and epoch moves", () => {
  it("takes the middle, or the mean of the two middles", () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });
  it("colours a rollback over an update, an update over nothing", () => {
    expect(epochMove([])).toBe("none");
    expect(epochMove([update("a", 0, 1)])).toBe("update");
    expect(epochMove([update("a", 0, 1), rollback("b", 2, 1)])).toBe("rollback");
  });
});

describe("LossCurve", () => {
  const epochs = [
    epoch(1, { a: 0.6, b: 0.4, h: 0.9 }, [update("knobs", 0, 1)], ["h"]),
    epoch(2, { a: 0.8, b: 0.6, h: 0.7 }, [rollback("knobs", 1, 0)], ["h"]),
    epoch(3, { a: 0.2, b: 0.2, h: 0.1 }, [], ["h"]),
  ];
  it("has one point per finished epoch with its dot colour and transition", () => {
    const unfinished = { ...epoch(4, {}), completed_at: null };
    const pts = lossPoints([...epochs, unfinished]);
    expect(pts.map((p) => p.epoch)).toEqual([1, 2, 3]);
    expect(pts.map((p) => p.move)).toEqual(["update", "rollback", "none"]);
    expect(pts[0].transitions).toEqual(["update knobs v0→v1"]);
    expect(pts[2].average).toBeCloseTo((0.5 + 0.7 + 0.2) / 3);
    const s = series(lossCurveOption(pts) as Record<string, unknown>);
    const dots = s[0].data as { value: number; itemStyle: { color: string } }[];
    expect(dots.map((d) => d.itemStyle.color)).toEqual([COLORS.update, COLORS.rollback, COLORS.none]);
    expect(s[1].name).toBe("3-epoch average");
    expect(s[1].lineStyle?.type).toBe("dashed");
  });
  it("draws held-out tasks as their own series and says v{from}→v{to} in the tooltip", () => {
    const opt = lossCurveOption(lossPoints(epochs)) as Record<string, unknown>;
    const s = series(opt);
    expect(s.map((x) => x.name)).toContain("held-out mean");
    expect(s[2].data).toEqual([0.9, 0.7, 0.1]);
    const fmt = (opt.tooltip as { formatter: Fmt }).formatter;
    expect(fmt([{ dataIndex: 0 }])).toContain("update knobs v0→v1");
    expect(fmt([{ dataIndex: 1 }])).toContain("rollback knobs v1→v0");
    expect(fmt([{ dataIndex: 2 }])).toContain("no artifact change");
  });
  it("adds a zoom slider for long histories", () => {
    const many = Array.from({ length: 500 }, (_, i) => epoch(i + 1, { a: 1 / (i + 1) }));
    const opt = lossCurveOption(lossPoints(many)) as Record<string, unknown>;
    const zooms = opt.dataZoom as { type: string; start: number; end: number }[];
    expect(zooms.map((z) => z.type)).toEqual(["inside", "slider"]);
    // It opens on the latest 100 of the 500 epochs.
    expect(zooms.every((z) => z.start === 80 && z.end === 100)).toBe(true);
    expect(opt.animation).toBe(false);
  });
  it("shows short histories whole", () => {
    expect(zoom(20)).toEqual([{ type: "inside" }]);
    expect(zoom(100).map((z) => (z as { start: number }).start)).toEqual([0, 0]);
  });
});

describe("ArtifactDeltaTimeline", () => {
  it("has a row per artifact that moved and a circle or cross per event", () => {
    const epochs = [epoch(1, { a: 1 }, [update("knobs", 0, 1)]), epoch(2, { a: 1 }, [rollback("knobs", 1, 0), update("prompt", 0, 1)]), epoch(3, { a: 1 })];
    const { rows, marks } = timelineMarks(epochs, ["aso_config", "knobs", "prompt"]);
    expect(rows).toEqual(["knobs", "prompt"]);
    expect(marks).toHaveLength(3);
    const opt = timelineOption(rows, marks, [1, 2, 3]) as Record<string, unknown>;
    const [updates, rollbacks] = series(opt);
    expect(updates.symbol).toBe("circle");
    // [column of the epoch, row, from, to, artifact, epoch]
    expect(updates.data).toEqual([
      [0, 0, 0, 1, "knobs", 1],
      [1, 1, 0, 1, "prompt", 2],
    ]);
    expect(rollbacks.symbol).toMatch(/^path:\/\//);
    expect(rollbacks.data).toEqual([[1, 0, 1, 0, "knobs", 2]]);
    const fmt = (opt.tooltip as { formatter: (p: unknown) => string }).formatter;
    expect(fmt({ seriesName: "rollback", value: [1, 0, 1, 0, "knobs", 2] })).toContain("<b>epoch 2</b><br/>rollback knobs v1→v0");
    // The columns are the same epochs as the loss curve's.
    expect((opt.xAxis as { type: string; data: number[] }).data).toEqual([1, 2, 3]);
  });
});

describe("PerTaskLossBoxplot", () => {
  const epochs = [epoch(1, { a: 0.1, b: 0.5, c: 0.3, h: 0.9 }, [], ["h"]), epoch(2, { a: 0.2, b: 0.4, h: 0.8 }, [], ["h"])];
  it("spans min to max of the training tasks with the median, holding out the rest", () => {
    const pts = spreadPoints(epochs);
    expect(pts[0]).toMatchObject({ epoch: 1, min: 0.1, max: 0.5, median: 0.3 });
    expect(pts[0].holdout).toEqual([{ task: "h", loss: 0.9 }]);
    expect(pts[1].median).toBeCloseTo(0.3);
    const opt = boxplotOption(pts) as Record<string, unknown>;
    const s = series(opt);
    expect(s[0].data).toEqual([0.1, 0.2]);
    expect(s[1].data.map((x) => Number((x as number).toFixed(6)))).toEqual([0.4, 0.2]);
    expect(s[2].data).toEqual([0.3, pts[1].median]);
    expect(s[3]).toMatchObject({ name: "held-out task", symbol: "diamond", data: [[0, 0.9], [1, 0.8]] });
  });
  it("lists every task's loss in the tooltip, held-out ones marked", () => {
    const fmt = ((boxplotOption(spreadPoints(epochs)) as Record<string, unknown>).tooltip as { formatter: Fmt }).formatter;
    const text = fmt([{ dataIndex: 0 }]);
    for (const t of ["a: 0.1000", "b: 0.5000", "c: 0.3000", "h <i>(held out)</i>: 0.9000"]) expect(text).toContain(t);
  });
});

describe("calibration of proposals", () => {
  const item = (o: Partial<ProposalItem>): ProposalItem => ({
    id: 1,
    epoch_num: 1,
    optimizer: "textgrad",
    artifact: "style",
    outcome: "winner",
    parent_version: 0,
    applied_version: 1,
    rationale: "r",
    expected_loss_reduction: 0.1,
    confidence: 0.8,
    observed_loss_reduction: 0.05,
    rolled_back: false,
    rejection: null,
    learning_rate: 0.5,
    ...o,
  });
  it("keeps only applied proposals whose effect was observed and that predicted something", () => {
    const pts = calibrationPoints([
      item({ id: 1 }),
      item({ id: 2, outcome: "candidate", applied_version: null }),
      item({ id: 3, observed_loss_reduction: null }),
      item({ id: 4, expected_loss_reduction: null }),
      item({ id: 5, epoch_num: 2, observed_loss_reduction: -0.2, rolled_back: true }),
    ]);
    expect(pts).toEqual([
      { epoch: 1, artifact: "style", predicted: 0.1, observed: 0.05, rolledBack: false },
      { epoch: 2, artifact: "style", predicted: 0.1, observed: -0.2, rolledBack: true },
    ]);
  });
  it("splits kept from rolled-back dots and spans both axes over every value", () => {
    const o = calibrationOption(calibrationPoints([item({}), item({ epoch_num: 2, observed_loss_reduction: -0.2, rolled_back: true })]));
    const s = series(o);
    expect(s.map((x) => x.name)).toEqual(["kept", "rolled back", "predicted = observed"]);
    expect(s[2].data).toEqual([
      [-0.2, -0.2],
      [0.1, 0.1],
    ]);
    expect(s[0].data).toEqual([[0.1, 0.05, 1, "style"]]);
    expect(s[1].data).toEqual([[0.1, -0.2, 2, "style"]]);
    const x = (o as { xAxis: { min: number; max: number } }).xAxis;
    expect([x.min, x.max]).toEqual([-0.2, 0.1]);
  });
});
