// Epochs in the API's shape for the unit tests, built the way the server
// builds them (see service::build_epochs): counted task losses, events.
import type { ArtifactEvent } from "../generated/ArtifactEvent";
import type { EpochView } from "../generated/EpochView";
import type { SuiteItem } from "../generated/SuiteItem";

export function epoch(num: number, losses: Record<string, number>, events: ArtifactEvent[] = [], holdout: string[] = []): EpochView {
  const tasks = Object.entries(losses).map(([task, loss], i) => ({ task, run_id: num * 100 + i, loss, status: "complete" as const, holdout: holdout.includes(task) }));
  const train = tasks.filter((t) => !t.holdout).map((t) => t.loss);
  const held = tasks.filter((t) => t.holdout).map((t) => t.loss);
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
  return {
    epoch_id: num,
    epoch_num: num,
    started_at: "2026-01-01T00:00:00Z",
    completed_at: "2026-01-01T00:01:00Z",
    mean_loss: mean(train),
    holdout_mean_loss: mean(held),
    parent_artifacts: { knobs: 0 },
    child_artifacts: { knobs: 0 },
    events,
    transitions: events.map((e) => `${e.type} ${e.artifact} v${e.from_version}→v${e.to_version}`),
    note: null,
    model: null,
    tasks,
    runs: [],
  };
}

export const update = (artifact: string, from: number, to: number): ArtifactEvent => ({
  type: "update",
  artifact,
  from_version: from,
  to_version: to,
  rationale: "r",
  expected_loss_reduction: null,
  confidence: null,
  learning_rate: 0.5,
});

export const rollback = (artifact: string, from: number, to: number): ArtifactEvent => ({
  type: "rollback",
  artifact,
  from_version: from,
  to_version: to,
  mean_loss_prev: 0.2,
  mean_loss_current: 0.3,
  new_learning_rate: 0.25,
  reason: "training",
  holdout_mean_prev: null,
  holdout_mean_current: null,
});

/** A suite's row as the Suites screen gets it, with `over` changed. */
export const suiteItem = (over: Partial<SuiteItem> = {}): SuiteItem => ({
  id: 3,
  name: "knobs",
  created_at: "2026-01-01T00:00:00Z",
  epochs: 8,
  latest_mean_loss: 0.26,
  status: "idle",
  tasks: 4,
  holdout_tasks: 1,
  suite_path: null,
  last_error: null,
  launch_id: null,
  last_launch_runs: null,
  model: null,
  ...over,
});
