-- Attractor's initial schema.
--
-- The first four tables keep the names and columns of the outer-loop design
-- (seed 004 §12); `aso_telemetry` keeps the columns of the ASO plan (seed 000
-- §2.3). The rest hold what runs, events and suite-declared artifacts need.
-- Nothing is ever deleted: rollbacks and re-runs are pointer flips and new rows.

-- Versions 1, 2, ... of every learnable artifact. Version 0 is the built-in (or
-- suite-declared) default and is never stored here.
CREATE TABLE artifact_versions (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    artifact_name  TEXT    NOT NULL,
    version        INTEGER NOT NULL CHECK (version >= 1),
    content        TEXT    NOT NULL,
    parent_version INTEGER NOT NULL,
    created_at     TEXT    NOT NULL,
    epoch_id       INTEGER REFERENCES epochs(id),
    is_active      INTEGER NOT NULL DEFAULT 0 CHECK (is_active IN (0, 1)),
    UNIQUE (artifact_name, version)
);
-- At most one active version per artifact, enforced by the database itself.
CREATE UNIQUE INDEX artifact_versions_one_active
    ON artifact_versions (artifact_name) WHERE is_active = 1;

CREATE TABLE task_suites (
    id                      INTEGER PRIMARY KEY AUTOINCREMENT,
    name                    TEXT NOT NULL UNIQUE,
    tasks_json              TEXT NOT NULL,
    baseline_artifacts_json TEXT NOT NULL,
    created_at              TEXT NOT NULL
);

CREATE TABLE epochs (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_id              INTEGER NOT NULL REFERENCES task_suites(id),
    epoch_num             INTEGER NOT NULL,
    started_at            TEXT    NOT NULL,
    completed_at          TEXT,
    mean_loss             REAL,
    parent_artifacts_json TEXT    NOT NULL,
    child_artifacts_json  TEXT,
    UNIQUE (suite_id, epoch_num)
);

CREATE TABLE epoch_runs (
    epoch_id    INTEGER NOT NULL REFERENCES epochs(id),
    run_id      INTEGER NOT NULL REFERENCES runs(id),
    task_name   TEXT    NOT NULL,
    loss        REAL    NOT NULL,
    scores_json TEXT    NOT NULL,
    PRIMARY KEY (epoch_id, task_name)
);

-- One ASO experiment: the coordinator working on one task run. The coordinator
-- fills it; `aso_telemetry` rows point at it.
CREATE TABLE experiments (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id     INTEGER REFERENCES runs(id),
    task_name  TEXT NOT NULL,
    config_json TEXT,
    created_at TEXT NOT NULL
);

CREATE TABLE aso_telemetry (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    timestamp TEXT NOT NULL,
    experiment_id INTEGER NOT NULL,
    cycle INTEGER NOT NULL,
    trajectory_id INTEGER NOT NULL,
    step INTEGER NOT NULL,
    status TEXT NOT NULL,
    objective REAL,
    max_violation REAL,
    directive_action TEXT NOT NULL,
    directive_source TEXT NOT NULL,
    evals_used INTEGER NOT NULL,
    wall_time_ms REAL,
    llm_call_made INTEGER NOT NULL,
    diagnostics_json TEXT,
    directive_json TEXT,
    FOREIGN KEY (experiment_id) REFERENCES experiments(id)
);

-- One execution of one task. `status` is running until the run ends; a run
-- cut short by Ctrl-C or a crash is marked cancelled and is run again on resume.
CREATE TABLE runs (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_id            INTEGER NOT NULL REFERENCES task_suites(id),
    epoch_id            INTEGER NOT NULL REFERENCES epochs(id),
    task_name           TEXT    NOT NULL,
    kind                TEXT    NOT NULL,
    status              TEXT    NOT NULL,
    run_dir             TEXT    NOT NULL,
    started_at          TEXT    NOT NULL,
    finished_at         TEXT,
    duration_ms         INTEGER,
    exit_code           INTEGER,
    loss                REAL,
    loss_breakdown_json TEXT,
    result_json         TEXT,
    error               TEXT,
    stdout              TEXT,
    stderr              TEXT
);
CREATE INDEX runs_by_epoch ON runs (epoch_id);

-- The typed events of the in-process bus, persisted in publication order.
CREATE TABLE events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    kind         TEXT NOT NULL,
    suite_id     INTEGER,
    epoch_id     INTEGER,
    run_id       INTEGER,
    payload_json TEXT NOT NULL,
    occurred_at  TEXT NOT NULL,
    recorded_at  TEXT NOT NULL
);
CREATE INDEX events_by_suite ON events (suite_id, id);

-- Artifacts a suite declares for itself (what the outer loop tunes for command
-- tasks). The declared content is that artifact's version 0.
CREATE TABLE artifact_declarations (
    artifact_name TEXT PRIMARY KEY,
    suite_name    TEXT NOT NULL,
    kind          TEXT NOT NULL CHECK (kind IN ('text', 'json')),
    description   TEXT NOT NULL DEFAULT '',
    content       TEXT NOT NULL,
    fields_json   TEXT NOT NULL,
    declared_at   TEXT NOT NULL
);
