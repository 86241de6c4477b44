-- Agent tasks: the convergence engine's trajectories, one row per iteration,
-- and the strategy bandit's learned state per task category (seed 002 §8.2,
-- §10.2).

-- One trajectory: every attempt at one run of an agent task. `state_json` is
-- the resumable state (the engine's trajectory, the bandit, the strategy
-- chosen next, the executor's notes), rewritten after every iteration, so a
-- run stopped by Ctrl-C, a crash or a pause for a person continues where it
-- was when the same epoch is resumed. `run_id` moves to the run that resumes it.
CREATE TABLE trajectories (
    id                      TEXT PRIMARY KEY,
    run_id                  INTEGER NOT NULL REFERENCES runs(id),
    suite_id                INTEGER NOT NULL REFERENCES task_suites(id),
    epoch_id                INTEGER NOT NULL REFERENCES epochs(id),
    task_name               TEXT    NOT NULL,
    category                TEXT    NOT NULL,
    workspace_dir           TEXT    NOT NULL,
    status                  TEXT    NOT NULL CHECK (status IN (
                                'running', 'paused', 'converged', 'accepted_partial', 'exhausted',
                                'abandoned', 'trapped', 'failed')),
    -- SETUP's decisions: basin width, estimate, mode, budget and policy.
    setup_json              TEXT    NOT NULL,
    state_json              TEXT    NOT NULL,
    -- The question this trajectory waits on while `paused`.
    pending_intervention_id INTEGER REFERENCES interventions(id),
    iterations              INTEGER NOT NULL DEFAULT 0,
    tokens_used             INTEGER NOT NULL DEFAULT 0,
    final_level             REAL,
    best_sequence           INTEGER,
    -- The terminal loop control (result, or the partial result with next moves).
    result_json             TEXT,
    started_at              TEXT    NOT NULL,
    updated_at              TEXT    NOT NULL,
    finished_at             TEXT
);
CREATE INDEX trajectories_by_run ON trajectories (run_id);
CREATE INDEX trajectories_resumable ON trajectories (epoch_id, task_name, status);

-- One row per iteration: what was tried, what the overseers measured, how the
-- engine read it, and what it decided.
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
    -- The goal gradient's round: loss parts, ∇L, directive and why.
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
    -- The executor's own account, and the overseers' in one line.
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

-- The strategy bandit's arms per task category, primed into every new
-- trajectory of that category and merged back when it ends.
CREATE TABLE bandit_states (
    category     TEXT PRIMARY KEY,
    state_json   TEXT    NOT NULL,
    trajectories INTEGER NOT NULL DEFAULT 0,
    updated_at   TEXT    NOT NULL
);
