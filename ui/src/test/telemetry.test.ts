import { describe, expect, it } from "vitest";
import { referenceOf, telemetryLabels, telemetryOption } from "../lib/telemetry";
import type { TelemetryStep } from "../generated/TelemetryStep";

function step(trajectory_id: number, step: number, objective: number, max_violation: number, source = "heuristic"): TelemetryStep {
  return {
    trajectory_id,
    step,
    status: "IN_PROGRESS",
    objective,
    max_violation,
    directive_action: "CONTINUE",
    directive_source: source,
    llm_call_made: source === "llm",
    evals_used: step,
  } as TelemetryStep;
}

type Axis = { type: string; name: string; min?: number; max?: number };
type Series = { name: string; data: { value: (number | string | null)[]; symbol: string; symbolSize: number }[] };

describe("the ASO telemetry chart", () => {
  it("names an agent run's axes for what they hold and keeps zero violations on a linear axis", () => {
    const steps = [step(1, 1, 0.7, 0.7), step(1, 2, 0.0, 0.0, "convergence"), step(2, 1, 0.5, 0.5, "llm")];
    const option = telemetryOption(steps, "agent") as { yAxis: Axis[]; series: Series[] };
    expect(option.yAxis.map((a) => [a.type, a.name])).toEqual([
      ["value", "distance D"],
      ["value", "worst check failing"],
    ]);
    expect(option.yAxis[1].max).toBe(1);
    // One legend entry per quantity, not two per trajectory.
    expect(option.series.map((s) => s.name)).toEqual(["distance D", "worst check failing", "distance D", "worst check failing"]);
    expect(option.series[1].data[1].value[1]).toBe(0);
    expect(option.series[0].data[1].symbol).toBe("rect");
    expect(option.series[2].data[0].symbolSize).toBeGreaterThan(option.series[0].data[0].symbolSize);
    expect(telemetryLabels("agent").evals).toBe("iterations");
  });

  it("keeps the numeric run's log violation axis with a floor for exact feasibility", () => {
    const option = telemetryOption([step(0, 1, 12.5, 0)], "optimize") as { yAxis: Axis[]; series: Series[] };
    expect(option.yAxis[1]).toMatchObject({ type: "log", name: "max violation" });
    expect(option.series[1].data[0].value[1]).toBe(1e-12);
    expect(option.series[0].name).toBe("objective");
  });

  it("spreads one-step trajectories along the run instead of stacking them in one column", () => {
    const steps = [0, 1, 2, 3, 4, 5].map((t) => step(t, 1, -5 + t, 0));
    const option = telemetryOption(steps, "optimize") as { series: Series[]; legend: { data: string[] } };
    const xs = option.series.filter((s) => s.name === "objective").map((s) => s.data[0].value[0]);
    expect(xs).toEqual([1, 2, 3, 4, 5, 6]);
    expect(option.legend.data).toEqual(["objective", "max violation"]);
  });

  it("draws the known optimum as a reference line and labels the axes with the digits that matter", () => {
    const option = telemetryOption([step(0, 1, -5.5, 1e-21)], "optimize", -5.508013) as {
      series: (Series & { markLine?: { data: { yAxis: number }[]; label: { formatter: string } } })[];
      yAxis: { axisLabel: { formatter: (v: number) => string } }[];
    };
    expect(option.series[0].markLine?.data).toEqual([{ yAxis: -5.508013 }]);
    expect(option.series[0].markLine?.label.formatter).toBe("known optimum -5.508");
    expect(option.yAxis[1].axisLabel.formatter(1e-21)).toBe("1e-21");
    expect(referenceOf({ reference: -5.5, problem: "g24" })).toBe(-5.5);
    expect(referenceOf({ problem: "mine" })).toBeNull();
  });
});
