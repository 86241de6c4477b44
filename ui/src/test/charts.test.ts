import { describe, expect, it } from "vitest";
import {
  COLORS,
  boxplotOption,
  calibrationOption,
  calibrationRange,
  calibrationPoints,
  lossAxisMax,
  lossCurveOption,
  lossSummary,
  timelineOption,
  timelineTipAt,
  zoom,
} from "../lib/charts";
import type { LossPoint } from "../generated/LossPoint";
import type { ProposalItem } from "../generated/ProposalItem";
import type { SuiteCharts } from "../generated/SuiteCharts";
import type { TimelineMark } from "../generated/TimelineMark";
import { suiteItem } from "./fixtures";
import { fmtLoss } from "../lib/format";
import { sketchable } from "../lib/sketch";

type Series = { name: string; type: string; data: unknown[]; lineStyle?: { type: string }; symbol?: string; tooltip?: { show: boolean } };
const series = (o: Record<string, unknown>) => o.series as Series[];
type Fmt = (p: { dataIndex: number }[]) => string;

// What the server sends (`report::shape::suite_charts`, tested on the Rust
// side): three finished epochs, the second with a rollback and no counted task.
const point = (epoch: number, loss: number | null, movement: LossPoint["movement"], transitions: string[] = []): LossPoint => ({
  epoch,
  loss,
  average: loss,
  holdout: loss === null ? null : loss + 0.3,
  movement,
  transitions,
});
const mark = (epoch: number, column: number, row: number, artifact: string, rollback: boolean, from: number, to: number): TimelineMark => ({
  epoch,
  column,
  row,
  artifact,
  rollback,
  from,
  to,
  label: `${rollback ? "rollback" : "update"} ${artifact} v${from}→v${to}`,
  why: rollback ? " (training loss rose 0.5000 → 0.6000)" : "",
});
const charts = (): SuiteCharts => ({
  suite: suiteItem({ id: 1, name: "s", epochs: 3, latest_mean_loss: 0.2 }),
  epochs: [1, 2, 4],
  loss: [point(1, 0.5, "update", ["update knobs v0→v1"]), point(2, null, "rollback", ["rollback knobs v1→v0 (held-out loss rose 0.3000 → 0.4000)"]), point(4, 0.2, "none")],
  spread: [
    { epoch: 1, min: 0.1, q1: 0.2, median: 0.3, q3: 0.4, max: 0.5, tasks: [[0, 0.1], [2, 0.3], [1, 0.5]], holdout: [[3, 0.9]] },
    null,
    { epoch: 4, min: 0.2, q1: 0.25, median: 0.3, q3: 0.35, max: 0.4, tasks: [[0, 0.2], [1, 0.4]], holdout: [[3, 0.8]] },
  ],
  tasks: ["a", "b", "c", "h"],
  rows: ["knobs", "prompt"],
  marks: [mark(1, 0, 0, "knobs", false, 0, 1), mark(2, 1, 0, "knobs", true, 1, 0), mark(4, 2, 1, "prompt", false, 0, 1)],
  searched: false,
});

describe("LossCurve", () => {
  it("has one dot per column coloured by the epoch's move, and the moving average dashed", () => {
    const s = series(lossCurveOption(charts()) as Record<string, unknown>);
    const dots = s[0].data as { value: number; itemStyle: { color: string } }[];
    expect(dots.map((d) => d.itemStyle.color)).toEqual([COLORS.update, COLORS.rollback, COLORS.none]);
    expect(s[1].name).toBe("3-epoch average");
    expect(s[1].lineStyle?.type).toBe("dashed");
  });
  it("draws held-out tasks as their own series and names the transition, with a rollback's reason, in the tooltip", () => {
    const opt = lossCurveOption(charts()) as Record<string, unknown>;
    const s = series(opt);
    expect(s.map((x) => x.name)).toContain("held-out mean");
    expect(s[2].data).toEqual([0.8, null, 0.5]);
    const fmt = (opt.tooltip as { formatter: Fmt }).formatter;
    expect(fmt([{ dataIndex: 0 }])).toContain("update knobs v0→v1");
    expect(fmt([{ dataIndex: 1 }])).toContain("<b>epoch 2</b>");
    expect(fmt([{ dataIndex: 1 }])).toContain("held-out loss rose");
    expect(fmt([{ dataIndex: 2 }])).toContain("no artifact change");
    expect((opt.xAxis as { data: number[] }).data).toEqual([1, 2, 4]);
  });
  it("labels the loss axis with the digits that matter", () => {
    const y = (lossCurveOption(charts()) as { yAxis: { axisLabel: { formatter: (v: number) => string } } }).yAxis;
    expect(y.axisLabel.formatter(1e-21)).toBe("1e-21");
    expect(y.axisLabel.formatter(0.30000000000000004)).toBe("0.3");
  });
  it("tops the loss axis at 1 when the losses come near it but not above, on both loss charts", () => {
    for (const option of [lossCurveOption(charts()), boxplotOption(charts())]) {
      expect((option as { yAxis: { max: unknown } }).yAxis.max).toBe(lossAxisMax);
    }
    expect(lossAxisMax({ min: 0.2, max: 0.97 })).toBe(1);
    expect(lossAxisMax({ min: 0.2, max: 1 })).toBe(1);
    expect(lossAxisMax({ min: 0.5, max: 1.3 })).toBeNull();
    // Small losses keep an axis that follows them.
    expect(lossAxisMax({ min: 0.01, max: 0.03 })).toBeNull();
  });
  it("adds a zoom slider for long histories", () => {
    const many = charts();
    many.epochs = Array.from({ length: 500 }, (_, i) => i + 1);
    many.loss = many.epochs.map((e) => point(e, 1 / e, "none"));
    const opt = lossCurveOption(many) as Record<string, unknown>;
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
  it("puts a circle or a cross per event on the shared columns", () => {
    const opt = timelineOption(charts()) as Record<string, unknown>;
    const [updates, rollbacks] = series(opt);
    expect(updates.symbol).toBe("circle");
    // [column, row, index of the mark]
    expect(updates.data).toEqual([
      [0, 0, 0],
      [2, 1, 2],
    ]);
    expect(rollbacks.symbol).toMatch(/^path:\/\//);
    expect(rollbacks.data).toEqual([[1, 0, 1]]);
    const fmt = (opt.tooltip as { formatter: (p: unknown) => string }).formatter;
    expect(fmt({ value: [1, 0, 1] })).toContain("<b>epoch 2</b><br/>rollback knobs v1→v0");
    expect((opt.xAxis as { type: string; data: number[] }).data).toEqual([1, 2, 4]);
  });
  it("answers a pointer on another chart's column with that epoch's mark, or none", () => {
    const c = charts();
    expect(timelineTipAt(c, 0)).toEqual({ seriesIndex: 0, dataIndex: 0 });
    expect(timelineTipAt(c, 1)).toEqual({ seriesIndex: 1, dataIndex: 0 });
    expect(timelineTipAt(c, 2)).toEqual({ seriesIndex: 0, dataIndex: 1 });
    c.marks = c.marks.slice(0, 1);
    expect(timelineTipAt(c, 2)).toBeNull();
  });
});

describe("PerTaskLossBoxplot", () => {
  it("draws a box per column over the middle half, a gap for an epoch without tasks, held-out tasks apart", () => {
    const s = series(boxplotOption(charts()) as Record<string, unknown>);
    expect(s[0].type).toBe("boxplot");
    expect(s[0].data).toEqual([
      [0.1, 0.2, 0.3, 0.4, 0.5],
      ["-", "-", "-", "-", "-"],
      [0.2, 0.25, 0.3, 0.35, 0.4],
    ]);
    expect(s[1]).toMatchObject({ name: "held-out task", symbol: "diamond", data: [[0, 0.9], [2, 0.8]], tooltip: { show: false } });
  });
  it("lists every task's loss by name in the tooltip, held-out ones marked", () => {
    const fmt = ((boxplotOption(charts()) as Record<string, unknown>).tooltip as { formatter: Fmt }).formatter;
    const text = fmt([{ dataIndex: 0 }]);
    for (const t of ["<b>epoch 1</b>", "middle half 0.2000–0.4000", "a: 0.1000", "b: 0.5000", "c: 0.3000", "h <i>(held out)</i>: 0.9000"]) expect(text).toContain(t);
    expect(fmt([{ dataIndex: 1 }])).toBe("");
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
    decision: null,
    decision_summary: null,
    rejection: null,
    learning_rate: 0.5,
    edited_by_person: false,
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
  it("rounds both axes' ends out to a tick, so no label carries a value's 17 digits", () => {
    expect(calibrationRange([-0.052360892575469054, 0.0493185041609364])).toEqual({ lo: -0.06, hi: 0.06, step: 0.02 });
    expect(calibrationRange([0.003])).toEqual({ lo: 0, hi: 0.01, step: 0.002 });
    const o = calibrationOption(calibrationPoints([item({ expected_loss_reduction: 0.0493185041609364, observed_loss_reduction: -0.052360892575469054 })])) as Record<string, Record<string, unknown>>;
    expect([o.xAxis.min, o.xAxis.max, o.yAxis.min, o.yAxis.max]).toEqual([-0.06, 0.06, -0.06, 0.06]);
    // Along the grid's edges, not through zero.
    expect(o.yAxis.axisLine).toEqual({ onZero: false });
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

describe("the first frame of a long history", () => {
  // 200 finished epochs; an update at epoch 10 (before the window) and a
  // rollback at epoch 150 (inside it).
  const long = (): SuiteCharts => {
    const epochs = Array.from({ length: 200 }, (_, i) => i + 1);
    return {
      ...charts(),
      epochs,
      loss: epochs.map((e) => point(e, 1 / e, "none")),
      spread: epochs.map((e) => ({ epoch: e, min: 0, q1: 0, median: 1 / e, q3: 1, max: 1, tasks: [], holdout: [] })),
      marks: [mark(10, 9, 0, "knobs", false, 0, 1), mark(150, 149, 0, "knobs", true, 1, 0)],
    };
  };

  it("shows the latest 100 columns, the view ECharts' zoom opens on", () => {
    const c = long();
    for (const option of [lossCurveOption(c), timelineOption(c), boxplotOption(c)]) {
      // 50 % of 199 is 99.5, which ECharts rounds to 100.
      expect(sketchable(option)).toEqual({ from: 100, to: 199 });
      const zoom = (option as { dataZoom: { start: number; end: number }[] }).dataZoom[0];
      expect([zoom.start, zoom.end]).toEqual([50, 100]);
    }
  });

  it("shows a history of 150 epochs or fewer whole", () => {
    const c = long();
    const short = { ...c, epochs: c.epochs.slice(0, 150), loss: c.loss.slice(0, 150), spread: c.spread.slice(0, 150) };
    expect(sketchable(lossCurveOption(short))).toEqual({ from: 0, to: 149 });
  });

  it("draws a long history without entry animation and with small symbols", () => {
    const c = long();
    expect(lossCurveOption(c).animation).toBe(false);
    expect(boxplotOption(c).animation).toBe(false);
    const short = { ...c, epochs: c.epochs.slice(0, 100), loss: c.loss.slice(0, 100), spread: c.spread.slice(0, 100) };
    expect(lossCurveOption(short).animation).toBe(true);
  });
});

describe("the loss curve told in a sentence (its text alternative)", () => {
  const point = (epoch: number, loss: number | null): LossPoint => ({ epoch, loss, average: null, holdout: null, movement: "none", transitions: [] });

  it("says where the loss started, where it is and its lowest point", () => {
    expect(lossSummary([point(1, 0.5), point(2, 0.25), point(3, 0.375)])).toBe(
      `Mean loss by epoch, 3 epochs: ${fmtLoss(0.5)} at epoch 1, ${fmtLoss(0.375)} at epoch 3, lowest ${fmtLoss(0.25)} at epoch 2`,
    );
  });

  it("skips epochs without a mean, and says when none has one", () => {
    expect(lossSummary([point(1, null), point(2, 0.25)])).toMatch(/^Mean loss by epoch, 2 epochs: .* at epoch 2, .* at epoch 2,/);
    expect(lossSummary([point(1, null)])).toBe("Mean loss by epoch: no epoch measured yet");
  });
});
