-- Questions the system asks a person (tier 3 of the ASO coordinator, later the
-- convergence engine and the watcher). A pending one waits in the inbox; an
-- answered one is kept as history.
CREATE TABLE interventions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    kind         TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered')),
    suite_id     INTEGER REFERENCES task_suites(id),
    run_id       INTEGER REFERENCES runs(id),
    task_name    TEXT,
    subject      TEXT NOT NULL,
    context_json TEXT NOT NULL,
    answer       TEXT CHECK (answer IN ('approve', 'reject', 'hint')),
    answer_text  TEXT,
    created_at   TEXT NOT NULL,
    answered_at  TEXT
);
CREATE INDEX interventions_pending ON interventions (status, task_name);
