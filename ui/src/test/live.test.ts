// Which events make the Charts screen refetch: its own suite's epoch and
// launch events and reconnections — never another suite's runs.
import { describe, expect, it } from "vitest";
import type { Envelope } from "../generated/Envelope";
import { ARTIFACTS, countChanges, epochsVersion, suiteChanges } from "../lib/live";

const at = "2026-01-01T00:00:00Z";
const ev = (event: Record<string, unknown>) => ({ seq: 1, at, ...event }) as unknown as Envelope;

const runFinished = ev({ type: "run_finished", suite_id: 7, epoch_id: 1, run_id: 3, task: "a", status: "complete", loss: 0.2, duration_ms: 5, error: null });
const epochFinished = ev({ type: "epoch_finished", suite_id: 7, epoch_id: 1, epoch_num: 1, mean_loss: 0.2, holdout_mean_loss: null, learning_rate: 0.5, note: null, model: null });
const launchStarted = ev({ type: "launch_started", launch_id: 1, suite: "knobs", suite_path: "/s.yaml" });
const launchEnded = ev({ type: "launch_ended", launch_id: 1, suite: "knobs", suite_id: 7, status: "finished", error: null });

describe("suite changes", () => {
  it("come from epoch and launch events, not from runs", () => {
    expect(suiteChanges(runFinished)).toEqual([]);
    expect(suiteChanges(epochFinished)).toEqual(["id:7", ARTIFACTS]);
    expect(suiteChanges(launchStarted)).toEqual(["name:knobs"]);
    expect(suiteChanges(launchEnded)).toEqual(["name:knobs", "id:7"]);
  });

  it("move a suite's version only for that suite, and every suite's on a reconnection", () => {
    let counts: Record<string, number> = {};
    const start = counts;
    counts = countChanges(counts, runFinished);
    expect(counts).toBe(start);
    const v0 = epochsVersion(counts, 0, "knobs", 7);
    counts = countChanges(counts, launchStarted);
    counts = countChanges(counts, epochFinished);
    counts = countChanges(counts, launchEnded);
    expect(epochsVersion(counts, 0, "knobs", 7)).toBe(v0 + 4);
    expect(epochsVersion(counts, 0, "other", 8)).toBe(0);
    expect(epochsVersion(counts, 1, "other", 8)).toBe(1);
    // Before the suite's id is known, its name still counts.
    expect(epochsVersion(counts, 0, "knobs")).toBe(2);
  });

  it("move the artifacts' version when versions change or an epoch closes, never on a run's end", () => {
    const activated = ev({ type: "artifact_activated", artifact: "knobs", from_version: 2, to_version: 1 });
    expect(suiteChanges(activated)).toEqual([ARTIFACTS]);
    let counts: Record<string, number> = {};
    counts = countChanges(counts, runFinished);
    expect(counts[ARTIFACTS]).toBeUndefined();
    counts = countChanges(countChanges(counts, activated), epochFinished);
    expect(counts[ARTIFACTS]).toBe(2);
    // A run that ends on its best set artifacts back: its suite's screens and the artifacts refetch.
    const settled = ev({
      type: "run_settled",
      suite_id: 7,
      after_epoch: 3,
      epochs: [1, 3],
      mean_loss: 0,
      holdout_mean_loss: null,
      moved: [{ artifact: "knob", from_version: 2, to_version: 0, from_mean_loss: null }],
      line: "active: knob v0 (not v2: proposed last, never measured; pending for the next run)",
    });
    expect(suiteChanges(settled)).toEqual(["id:7", ARTIFACTS]);
  });
});
