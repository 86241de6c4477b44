-- What a run of a suite set out to do: its settings and the epochs it
-- planned. A run stopped before its plan was done (Ctrl-C, kill -9, a crash)
-- is continued, not restarted, by the next run with the same settings, so a
-- resumed run ends where the uninterrupted one would have.
CREATE TABLE suite_plans (
    suite_id     INTEGER PRIMARY KEY REFERENCES task_suites(id),
    request_json TEXT NOT NULL,    -- the settings that shape the history
    first_epoch  INTEGER NOT NULL, -- the epoch number the plan starts at
    epochs       INTEGER NOT NULL, -- epochs (tree: evaluations) planned
    finished_at  TEXT               -- set when the plan was carried out
);
