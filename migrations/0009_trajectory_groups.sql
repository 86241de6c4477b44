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
-- with foreign keys on, so the table is rebuilt: the observations that refer
-- to it are set aside first and put back afterwards, unchanged.

CREATE TABLE trajectory_observations_0009 AS SELECT * FROM trajectory_observations;
DROP TABLE trajectory_observations;

CREATE TABLE trajectories_0009 (
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
INSERT INTO trajectories_0009 (id, run_id, suite_id, epoch_id, task_name, category, workspace_dir, status,
        setup_json, state_json, pending_intervention_id, iterations, tokens_used, final_level, best_sequence,
        result_json, started_at, updated_at, finished_at)
    SELECT id, run_id, suite_id, epoch_id, task_name, category, workspace_dir, status, setup_json, state_json,
        pending_intervention_id, iterations, tokens_used, final_level, best_sequence, result_json, started_at,
        updated_at, finished_at
    FROM trajectories;
DROP TABLE trajectories;
ALTER TABLE trajectories_0009 RENAME TO trajectories;
CREATE INDEX trajectories_by_run ON trajectories (run_id);
CREATE INDEX trajectories_resumable ON trajectories (epoch_id, task_name, status);
CREATE INDEX trajectories_by_parent ON trajectories (parent_id, ordinal);

CREATE TABLE trajectory_observations (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    trajectory_id    TEXT    NOT NULL REFERENCES trajectories(id),
    sequence         INTEGER NOT NULL,
    strategy         TEXT    NOT NULL,
    forced           INTEGER NOT NULL CHECK (forced IN (0, 1)),
    commit_id        TEXT    NOT NULL,
    files_changed    INTEGER NOT NULL,
    lines_changed    INTEGER NOT NULL,
    level            REAL    NOT NULL,
    delta            REAL,
    attractor        TEXT    NOT NULL,
    attractor_confidence REAL NOT NULL,
    loss_d           REAL    NOT NULL,
    loss_p           REAL    NOT NULL,
    loss_omega       REAL    NOT NULL,
    loss             REAL    NOT NULL,
    grad_l           REAL    NOT NULL,
    directive        TEXT    NOT NULL,
    rationale        TEXT    NOT NULL,
    loop_control     TEXT    NOT NULL,
    next_strategy    TEXT,
    tokens           INTEGER NOT NULL,
    wall_time_ms     INTEGER NOT NULL,
    applied_edits    INTEGER NOT NULL,
    rejected_edits   INTEGER NOT NULL,
    summary          TEXT    NOT NULL,
    verdict_summary  TEXT    NOT NULL,
    verification_json TEXT,
    signals_json     TEXT    NOT NULL,
    overseer_runs_json TEXT  NOT NULL,
    execution_json   TEXT    NOT NULL,
    decision_json    TEXT    NOT NULL,
    created_at       TEXT    NOT NULL,
    UNIQUE (trajectory_id, sequence)
);
INSERT INTO trajectory_observations SELECT * FROM trajectory_observations_0009;
DROP TABLE trajectory_observations_0009;
