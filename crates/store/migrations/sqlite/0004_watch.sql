-- The folder watcher (`attractor watch`, the Watched Folders screen).
--
-- Folders are remembered across restarts; a removed folder keeps its row
-- (active = 0) and its files' history, and adding it again resumes it.
CREATE TABLE watched_folders (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    path       TEXT    NOT NULL UNIQUE,
    active     INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    added_at   TEXT    NOT NULL,
    removed_at TEXT
);

-- Every suite or task file the watcher found, one row per path. A rename
-- moves the row (same content, new path); an edit changes `content_hash`; a
-- deleted file keeps its row with status 'removed'.
CREATE TABLE watched_files (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    folder_id     INTEGER NOT NULL REFERENCES watched_folders(id),
    path          TEXT    NOT NULL UNIQUE,
    kind          TEXT    NOT NULL CHECK (kind IN ('suite', 'task')),
    -- SHA-256 of the file's bytes, hex.
    content_hash  TEXT    NOT NULL,
    status        TEXT    NOT NULL CHECK (status IN
                      ('invalid', 'failed', 'awaiting_approval', 'rejected', 'ready', 'removed')),
    -- The located issues of an invalid file (JSON list).
    issues_json   TEXT,
    -- Why a valid file could not be registered (a suite name another file uses…).
    error         TEXT,
    suite_id      INTEGER REFERENCES task_suites(id),
    suite_name    TEXT,
    run_mode      TEXT    NOT NULL DEFAULT 'manual' CHECK (run_mode IN ('manual', 'auto')),
    -- The approval this content needs; NULL when it runs no commands.
    approval_key  TEXT,
    first_seen_at TEXT    NOT NULL,
    updated_at    TEXT    NOT NULL,
    removed_at    TEXT
);
CREATE INDEX watched_files_by_hash ON watched_files (content_hash);
CREATE INDEX watched_files_by_folder ON watched_files (folder_id);

-- One ExecutionApproval intervention per thing to approve: the file content
-- together with the exact commands it would run. The same content found at
-- another path shares the question and its answer; an edit makes a new key.
CREATE TABLE execution_approvals (
    approval_key    TEXT    PRIMARY KEY,
    content_hash    TEXT    NOT NULL,
    intervention_id INTEGER NOT NULL REFERENCES interventions(id),
    commands_json   TEXT    NOT NULL,
    created_at      TEXT    NOT NULL
);

-- Runs the watcher queued for `run: auto` files: at most one per suite and
-- content, whatever the restarts, renames and copies. `owner` names the
-- process running it, so a crashed one's run is queued again.
CREATE TABLE watched_runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id      INTEGER NOT NULL REFERENCES watched_files(id),
    suite_name   TEXT    NOT NULL,
    content_hash TEXT    NOT NULL,
    status       TEXT    NOT NULL CHECK (status IN
                     ('queued', 'running', 'finished', 'failed', 'cancelled', 'dropped')),
    owner        TEXT,
    launch_id    INTEGER,
    suite_id     INTEGER REFERENCES task_suites(id),
    queued_at    TEXT    NOT NULL,
    started_at   TEXT,
    finished_at  TEXT,
    error        TEXT,
    UNIQUE (suite_name, content_hash)
);
