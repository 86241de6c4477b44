-- Trajectories that belong together (seed 002 §6.6 and Part 9): the samples
-- of a task run in parallel on one shared budget, and the subtasks and the
-- integration trajectory a task was split into. Each row now says which
-- trajectory it belongs to (`parent_id`), what part it plays (`role`) and its
-- place among its siblings (`ordinal`); a run's trajectories form a tree with
-- the run's own trajectory (`run-N`) at the root.
--
-- Roles: `root` — the run's own trajectory (it may split into subtasks);
-- `parallel` — the root of a parallel group (it makes no attempts itself, its
-- samples do); `sample` — one of those; `subtask` — one subtask of a split;
-- `integration` — the trajectory that measures the subtasks' combined work
-- against the task's own overseers and decides the result.
--
-- New statuses: `coordinating` (a split trajectory waiting for its subtasks
-- and integration), `superseded` (a sample stopped because another converged
-- first) and `cancelled` (stopped for good by its coordinator).
--
-- SQLite cannot change a CHECK in place, and migrations run in a transaction
-- with foreign keys on, so the table is rebuilt under the same name with the
-- foreign-key checks deferred to the commit: dropping it leaves the rows that
-- refer to it (observations, and whatever else does) dangling for a moment,
-- and copying the same ids back satisfies them again before the commit checks.

PRAGMA defer_foreign_keys = ON;

CREATE TEMP TABLE trajectories_0009 AS SELECT * FROM trajectories;
DROP TABLE trajectories;

CREATE TABLE trajectories (
    id                      TEXT PRIMARY KEY,
    run_id                  INTEGER NOT NULL REFERENCES runs(id),
    suite_id                INTEGER NOT NULL REFERENCES task_suites(id),
    epoch_id                INTEGER NOT NULL REFERENCES epochs(id),
    task_name               TEXT    NOT NULL,
    category                TEXT    NOT NULL,
    workspace_dir           TEXT    NOT NULL,
    status                  TEXT    NOT NULL CHECK (status IN (
                                'running', 'paused', 'coordinating', 'converged', 'accepted_partial',
                                'exhausted', 'abandoned', 'trapped', 'failed', 'superseded', 'cancelled')),
    setup_json              TEXT    NOT NULL,
    state_json              TEXT    NOT NULL,
    pending_intervention_id INTEGER REFERENCES interventions(id),
    iterations              INTEGER NOT NULL DEFAULT 0,
    tokens_used             INTEGER NOT NULL DEFAULT 0,
    final_level             REAL,
    best_sequence           INTEGER,
    result_json             TEXT,
    started_at              TEXT    NOT NULL,
    updated_at              TEXT    NOT NULL,
    finished_at             TEXT,
    parent_id               TEXT    REFERENCES trajectories(id),
    role                    TEXT    NOT NULL DEFAULT 'root' CHECK (role IN (
                                'root', 'parallel', 'sample', 'subtask', 'integration')),
    ordinal                 INTEGER NOT NULL DEFAULT 0
);
INSERT INTO trajectories (id, run_id, suite_id, epoch_id, task_name, category, workspace_dir, status, setup_json,
        state_json, pending_intervention_id, iterations, tokens_used, final_level, best_sequence, result_json,
        started_at, updated_at, finished_at)
    SELECT id, run_id, suite_id, epoch_id, task_name, category, workspace_dir, status, setup_json, state_json,
        pending_intervention_id, iterations, tokens_used, final_level, best_sequence, result_json, started_at,
        updated_at, finished_at
    FROM trajectories_0009;
DROP TABLE trajectories_0009;

CREATE INDEX trajectories_by_run ON trajectories (run_id);
CREATE INDEX trajectories_resumable ON trajectories (epoch_id, task_name, status);
CREATE INDEX trajectories_by_parent ON trajectories (parent_id, ordinal);
