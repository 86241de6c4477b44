-- One suite on many workers (issue 38): an epoch's runs as queue items any
-- worker on the database claims, one row per task of an open epoch. The
-- suite's holder enqueues them when the epoch starts, works some itself and
-- closes the epoch once every one is done; a worker that stopped
-- heartbeating loses its item to the next claim. Heartbeats are seconds on
-- the database's clock, so machines whose clocks differ judge alike.
CREATE TABLE run_items (
    id           INTEGER PRIMARY KEY,
    request_id   BIGINT,          -- the launch whose holder enqueued it (NULL: only the holder works it)
    suite_id     BIGINT NOT NULL REFERENCES task_suites(id),
    epoch_id     BIGINT NOT NULL REFERENCES epochs(id),
    task_name    TEXT NOT NULL,
    task_digest  TEXT NOT NULL,   -- the definition the holder runs (Task::digest)
    needs_json   TEXT NOT NULL DEFAULT '[]', -- labels a worker must offer
    status       TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done')),
    owner        TEXT,            -- the worker on it ("host:pid:nonce")
    holder       TEXT,            -- for people: "attractor worker (pid 4242 on host)"
    run_id       BIGINT,          -- the run its current claim recorded
    attempts     BIGINT NOT NULL DEFAULT 0,
    heartbeat    REAL, -- seconds since 1970 on the database's clock
    UNIQUE (epoch_id, task_name)
);
CREATE INDEX run_items_by_status ON run_items (status, id);

-- Which worker ran a run, for people (the Live screen, `attractor inspect`).
ALTER TABLE runs ADD COLUMN worker TEXT;

-- The workers on the database: each heartbeats while it serves, with what it
-- offers; one that stopped heartbeating is shown as stopped.
CREATE TABLE workers (
    owner        TEXT PRIMARY KEY,
    holder       TEXT NOT NULL,
    host         TEXT NOT NULL,
    pid          BIGINT NOT NULL,
    offers_json  TEXT NOT NULL DEFAULT '[]',
    concurrency  BIGINT NOT NULL,
    started      REAL NOT NULL,
    heartbeat    REAL NOT NULL,
    stopped      BIGINT NOT NULL DEFAULT 0
);

-- A suite's folder as its holder read it (a zip), for workers on machines
-- that do not have it at the launch's path; named by its SHA-256.
CREATE TABLE suite_bundles (
    digest      TEXT PRIMARY KEY,
    content     BLOB NOT NULL,
    size        BIGINT NOT NULL,
    created_at  TEXT NOT NULL
);
ALTER TABLE run_requests ADD COLUMN suite_bundle TEXT;
