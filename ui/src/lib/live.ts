// Which bus events change a suite's charts, and how a screen tells.
//
// The Charts screen of a long history holds megabytes (500 epochs × 50
// tasks): refetching and redrawing it costs a few hundred milliseconds of
// the page's main thread. It draws finished epochs only, so a run finishing —
// the most frequent event, and one that may belong to another suite — changes
// nothing on it. The screen refetches when its own suite finishes an epoch
// or a launch of it starts or ends (its status), and after a reconnection
// (events may have been missed).
import type { Envelope } from "../generated/Envelope";

/** The key that moves when any artifact's versions or their measures may have changed. */
export const ARTIFACTS = "artifacts";

/**
 * Keys of the suites whose epochs an event changes: `id:N` and/or `name:S`;
 * and `artifacts` when artifacts or their versions change (a suite starting
 * declares its own) or an epoch closes (it measures the versions it ran
 * with) — the Artifacts screen's refetches, not every run's end.
 */
export function suiteChanges(e: Envelope): string[] {
  switch (e.type) {
    case "epoch_finished":
      return [`id:${e.suite_id}`, ARTIFACTS];
    case "artifact_updated":
    case "artifact_rolled_back":
    case "artifact_activated":
    case "suite_started": // declares the suite's artifacts
      return [ARTIFACTS];
    case "run_settled": // the run set artifacts back to its best
      return [`id:${e.suite_id}`, ARTIFACTS];
    case "suite_finished":
      return [`id:${e.suite_id}`];
    case "launch_started":
      return [`name:${e.suite}`];
    case "launch_ended":
      return [`name:${e.suite}`, ...(e.suite_id !== null ? [`id:${e.suite_id}`] : [])];
    default:
      return [];
  }
}

/** Counts the changes per suite key (a new object when any count moves). */
export function countChanges(counts: Record<string, number>, e: Envelope): Record<string, number> {
  const keys = suiteChanges(e);
  if (!keys.length) return counts;
  const next = { ...counts };
  for (const k of keys) next[k] = (next[k] ?? 0) + 1;
  return next;
}

/**
 * A number that moves exactly when a suite's epochs may have changed: its own
 * changes (by name and, once known, by id) plus every reconnection.
 */
export function epochsVersion(counts: Record<string, number>, reconnects: number, name?: string, id?: number): number {
  return (name ? counts[`name:${name}`] ?? 0 : 0) + (id !== undefined ? counts[`id:${id}`] ?? 0 : 0) + reconnects;
}
