-- Run requests as data: launching (the app, `attractor run`, the watcher)
-- enqueues a request; a worker (any process on the database) claims it,
-- heartbeats it while it works and completes it. A request whose worker
-- died is claimed again, and its run continues the plan it left (see
-- suite_plans), so nothing finished is lost and nothing is run twice.
CREATE TABLE run_requests (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_name       TEXT NOT NULL,
    request_json     TEXT NOT NULL,   -- the RunRequest as launched (JSON)
    status           TEXT NOT NULL CHECK (status IN ('queued', 'running', 'finished', 'cancelled', 'failed')),
    owner            TEXT,            -- "host:pid:nonce" of the worker on it
    holder           TEXT,            -- for people: "attractor worker (pid 4242 on host)"
    enqueued_at      TEXT NOT NULL,
    started_at       TEXT,
    heartbeat_at     TEXT,
    finished_at      TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0, -- claims so far (a takeover adds one)
    suite_id         INTEGER,
    epochs_done      INTEGER NOT NULL DEFAULT 0,
    seed             INTEGER,         -- the base seed the run chose (given, a stopped plan's, or fresh)
    error            TEXT
);
CREATE INDEX run_requests_by_status ON run_requests (status, id);

-- Which process published an event, so a process tailing the table for
-- other processes' events (the app showing a CLI run live) skips its own.
ALTER TABLE events ADD COLUMN origin TEXT;
