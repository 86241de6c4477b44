// Live progress of launched suite runs, folded from the bus events the server
// pushes over SSE: what is in flight (the epoch and task bars, the running
// tasks, the auditor's alerts, the supervisor's moves). What has finished —
// epochs' losses, runs — the Live screen reads from the server instead
// (screens/live/History), so a reload loses nothing. A pure reducer: the
// tests feed it recorded event sequences.
import type { Envelope } from "../generated/Envelope";

export interface SuiteProgress {
  suite: string;
  suiteId: number | null;
  launchId: number | null;
  /** The epochs this launch set out to do: what was left of a plan it continues. */
  epochsRequested: number;
  epochsDone: number;
  /** The last epoch of the plan the run works (a continued plan's too). */
  planLast: number | null;
  currentEpoch: number | null;
  tasksTotal: number;
  tasksDone: number;
  /** The tasks running now, with the worker that runs each (empty: not known). */
  running: { task: string; worker: string }[];
  /** The auditor's alerts about this suite's runs (thrashing, token overrun, stuck). */
  alerts: { runId: number; kind: string; message: string }[];
  /**
   * The ASO supervisor's directives that changed an agent trajectory's
   * course (`supervision: aso`), newest last; the engine's own steps and
   * directives that left its choice alone are not kept.
   */
  directives: SupervisorMove[];
  ended: null | { status: string; error: string | null };
  /** What the run ended on, and why (`run_settled`'s line): which versions are active. */
  settled: string | null;
}

export interface SupervisorMove {
  runId: number;
  trajectory: string;
  sequence: number;
  action: string;
  source: string;
  applied: string;
  reasoning: string;
}

export type ProgressState = Record<string, SuiteProgress>;

/** Most recent supervisor moves kept per suite. */
const KEEP_DIRECTIVES = 20;

function fresh(suite: string): SuiteProgress {
  return {
    suite,
    suiteId: null,
    launchId: null,
    epochsRequested: 0,
    epochsDone: 0,
    planLast: null,
    currentEpoch: null,
    tasksTotal: 0,
    tasksDone: 0,
    running: [],
    alerts: [],
    directives: [],
    ended: null,
    settled: null,
  };
}

export function progressReducer(state: ProgressState, e: Envelope): ProgressState {
  const bySuiteId = (id: number) => Object.values(state).find((p) => p.suiteId === id);
  const put = (p: SuiteProgress) => ({ ...state, [p.suite]: p });
  switch (e.type) {
    case "audit_alert": {
      const p = bySuiteId(e.suite_id);
      if (!p) return state;
      return put({ ...p, alerts: [...p.alerts, { runId: e.run_id, kind: e.kind, message: e.message }] });
    }
    case "supervisor_directive": {
      const p = bySuiteId(e.suite_id);
      if (!p || e.applied === null) return state;
      const move: SupervisorMove = {
        runId: e.run_id,
        trajectory: e.trajectory_id,
        sequence: e.sequence,
        action: e.action,
        source: e.source,
        applied: e.applied,
        reasoning: e.reasoning,
      };
      return put({ ...p, directives: [...p.directives, move].slice(-KEEP_DIRECTIVES) });
    }
    case "launch_started":
      return put({ ...fresh(e.suite), launchId: e.launch_id });
    case "suite_started": {
      const prev = state[e.suite];
      const base = prev && !prev.ended ? prev : fresh(e.suite);
      const planLast = e.first_epoch + e.epochs - 1;
      return put({ ...base, suiteId: e.suite_id, epochsRequested: e.epochs, planLast, currentEpoch: null, tasksTotal: e.tasks });
    }
    case "epoch_started": {
      const p = bySuiteId(e.suite_id);
      if (!p) return state;
      // The first epoch a run starts: a continued plan has only the epochs
      // from here to its last left (a resumed launch's bar ends full).
      const first = p.currentEpoch === null && p.planLast !== null;
      const epochsRequested = first ? Math.max(1, (p.planLast ?? 0) - e.epoch_num + 1) : p.epochsRequested;
      return put({ ...p, epochsRequested, currentEpoch: e.epoch_num, tasksTotal: e.tasks_total, tasksDone: e.tasks_done, running: [] });
    }
    case "run_started": {
      const p = bySuiteId(e.suite_id);
      return p ? put({ ...p, running: [...p.running, { task: e.task, worker: e.worker }] }) : state;
    }
    case "run_finished": {
      const p = bySuiteId(e.suite_id);
      if (!p) return state;
      return put({ ...p, tasksDone: p.tasksDone + 1, running: p.running.filter((r) => r.task !== e.task) });
    }
    case "epoch_finished": {
      const p = bySuiteId(e.suite_id);
      return p ? put({ ...p, epochsDone: p.epochsDone + 1 }) : state;
    }
    case "run_settled": {
      const p = bySuiteId(e.suite_id);
      return p ? put({ ...p, settled: e.line }) : state;
    }
    case "launch_ended": {
      const p = state[e.suite] ?? fresh(e.suite);
      return put({ ...p, running: [], ended: { status: e.status, error: e.error } });
    }
    default:
      return state;
  }
}
