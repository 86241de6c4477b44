-- The ledger of model calls: one row per call sent to the model server, with
-- what it was made for, what it cost and how it ended. `cost` is NULL when the
-- model has no price; `outcome` is `ok`, `cut_off` (finish_reason "length") or
-- the failure's short reason.
CREATE TABLE model_calls (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_id          INTEGER REFERENCES task_suites(id),
    epoch_id          INTEGER REFERENCES epochs(id),
    run_id            INTEGER REFERENCES runs(id),
    role              TEXT    NOT NULL,
    model             TEXT    NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost              REAL,
    seconds           REAL    NOT NULL,
    outcome           TEXT    NOT NULL,
    created_at        TEXT    NOT NULL
);
CREATE INDEX model_calls_by_suite ON model_calls (suite_id, epoch_id);
CREATE INDEX model_calls_by_run ON model_calls (run_id);
