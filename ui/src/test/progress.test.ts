import { describe, expect, it } from "vitest";
import type { Envelope } from "../generated/Envelope";
import { progressReducer, type ProgressState } from "../lib/progress";

const at = "2026-01-01T00:00:00Z";
const events: Envelope[] = [
  { occurred_at: at, type: "launch_started", launch_id: 3, suite: "knobs", suite_path: "/s.yaml" },
  { occurred_at: at, type: "suite_started", suite_id: 1, suite: "knobs", epochs: 2, optimizer: "evolve", learning_rate: 0.5, rollback_on_regression: true, concurrency: 2, seed: 5, tasks: 2, first_epoch: 9, continued: false },
  { occurred_at: at, type: "epoch_started", suite_id: 1, epoch_id: 9, epoch_num: 9, parent_artifacts: {}, tasks_total: 2, tasks_done: 0, resumed: false, seed: 1 },
  { occurred_at: at, type: "run_started", suite_id: 1, epoch_id: 9, run_id: 40, task: "alpha", kind: "command", worker: "attractor worker (pid 7 on a)" },
  { occurred_at: at, type: "run_started", suite_id: 1, epoch_id: 9, run_id: 41, task: "beta", kind: "command", worker: "attractor worker (pid 8 on b)" },
  { occurred_at: at, type: "run_finished", suite_id: 1, epoch_id: 9, run_id: 40, task: "alpha", status: "complete", loss: 0.25, duration_ms: 120, error: null },
];

describe("progressReducer", () => {
  it("follows a launch from start through runs and epochs to its end", () => {
    let s: ProgressState = {};
    for (const e of events) s = progressReducer(s, e);
    let p = s.knobs;
    expect(p).toMatchObject({ launchId: 3, suiteId: 1, epochsRequested: 2, currentEpoch: 9, tasksTotal: 2, tasksDone: 1, running: [{ task: "beta", worker: "attractor worker (pid 8 on b)" }] });
    s = progressReducer(s, { occurred_at: at, type: "artifact_updated", suite_id: 1, epoch_id: 9, artifact: "knobs", from_version: 2, to_version: 3, rationale: "", learning_rate: 0.5 });
    s = progressReducer(s, { occurred_at: at, type: "epoch_finished", suite_id: 1, epoch_id: 9, epoch_num: 9, mean_loss: 0.3, holdout_mean_loss: null, learning_rate: 0.5, note: null, model: null });
    const line = "active: knobs v2 (not v3: proposed last, never measured; pending for the next run) — the best this run measured (epoch 9: mean loss 0.3000)";
    s = progressReducer(s, {
      occurred_at: at,
      type: "run_settled",
      suite_id: 1,
      after_epoch: 9,
      epochs: [9],
      mean_loss: 0.3,
      holdout_mean_loss: null,
      moved: [{ artifact: "knobs", from_version: 3, to_version: 2, from_mean_loss: null }],
      line,
    });
    s = progressReducer(s, { occurred_at: at, type: "launch_ended", launch_id: 3, suite: "knobs", suite_id: 1, status: "finished", error: null });
    p = s.knobs;
    expect(p.epochsDone).toBe(1);
    expect(p.ended).toEqual({ status: "finished", error: null });
    expect(p.settled).toBe(line);
  });
  it("counts a resumed launch's epochs as what was left of its plan, so its bar ends full", () => {
    let s: ProgressState = {};
    s = progressReducer(s, events[0]);
    // The plan was epochs 1–3; the stopped launch finished epoch 1.
    s = progressReducer(s, { ...events[1], epochs: 3, first_epoch: 1, continued: true } as Envelope);
    s = progressReducer(s, { ...events[2], epoch_num: 2, resumed: true, tasks_done: 1 } as Envelope);
    expect(s.knobs).toMatchObject({ epochsRequested: 2, currentEpoch: 2, tasksDone: 1 });
    s = progressReducer(s, { ...events[2], epoch_num: 3 } as Envelope);
    expect(s.knobs.epochsRequested).toBe(2);
  });

  it("ignores events of suites it never saw start, and a new launch starts fresh", () => {
    const s = progressReducer({}, events[5]);
    expect(s).toEqual({});
    let t: ProgressState = {};
    for (const e of events) t = progressReducer(t, e);
    t = progressReducer(t, { occurred_at: at, type: "launch_started", launch_id: 4, suite: "knobs", suite_path: "/s.yaml" });
    expect(t.knobs).toMatchObject({ launchId: 4, running: [], tasksDone: 0 });
  });

  it("keeps the auditor's alerts with the suite whose run they are about", () => {
    let s: ProgressState = {};
    for (const e of events) s = progressReducer(s, e);
    s = progressReducer(s, { occurred_at: at, type: "audit_alert", suite_id: 1, run_id: 41, trajectory_id: "t", kind: "thrashing", message: "3 break_symmetry in a row" });
    s = progressReducer(s, { occurred_at: at, type: "audit_alert", suite_id: 99, run_id: 1, trajectory_id: "u", kind: "stuck", message: "other suite" });
    expect(s.knobs.alerts).toEqual([{ runId: 41, kind: "thrashing", message: "3 break_symmetry in a row" }]);
  });

  it("keeps the supervisor's directives that changed a trajectory's course, the latest twenty", () => {
    let s: ProgressState = {};
    for (const e of events) s = progressReducer(s, e);
    const directive = (sequence: number, applied: string | null) =>
      ({
        occurred_at: at,
        type: "supervisor_directive",
        suite_id: 1,
        run_id: 41,
        trajectory_id: "run-41.s1",
        sequence,
        status: "STAGNATION",
        action: applied ? "RESTART" : "CONTINUE",
        source: "heuristic",
        reasoning: "stuck",
        llm_call_made: false,
        applied,
        refused: [],
      }) as Envelope;
    s = progressReducer(s, directive(0, null));
    expect(s.knobs.directives).toEqual([]);
    for (let i = 1; i <= 25; i++) s = progressReducer(s, directive(i, "next: fresh_start"));
    expect(s.knobs.directives.length).toBe(20);
    expect(s.knobs.directives[19]).toMatchObject({ sequence: 25, action: "RESTART", applied: "next: fresh_start", trajectory: "run-41.s1" });
  });
});
