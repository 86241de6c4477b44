-- Notices (seed 002 §7.3): an intervention point whose mode is `notify` tells
-- a person something without waiting for an answer — a trajectory entered a
-- limit cycle, chose to split its task, accepted a partial result. It is a row
-- of `interventions` like a question, so the inbox and `attractor
-- interventions` show it with the same what/why/evidence context, but its
-- status is `notice`: nothing waits on it, and it cannot be answered, only
-- dismissed (`dismissed`, with the time in `answered_at`).
--
-- SQLite cannot change a CHECK in place and migrations run in a transaction
-- with foreign keys on, so the table is rebuilt under the same name with the
-- foreign-key checks deferred to the commit (as 0009 does for trajectories):
-- the rows that refer to it (execution approvals, paused trajectories) dangle
-- for a moment and are satisfied again by the same ids before the commit.

PRAGMA defer_foreign_keys = ON;

CREATE TEMP TABLE interventions_0011 AS SELECT * FROM interventions;
-- The AUTOINCREMENT counter goes with the table; kept, so no id is ever reused.
CREATE TEMP TABLE interventions_seq_0011 AS SELECT seq FROM sqlite_sequence WHERE name = 'interventions';
DROP TABLE interventions;

CREATE TABLE interventions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    kind         TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered', 'notice', 'dismissed')),
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
INSERT INTO interventions (id, kind, status, suite_id, run_id, task_name, subject, context_json, answer, answer_text,
        created_at, answered_at)
    SELECT id, kind, status, suite_id, run_id, task_name, subject, context_json, answer, answer_text, created_at,
        answered_at
    FROM interventions_0011;
DROP TABLE interventions_0011;
DELETE FROM sqlite_sequence WHERE name = 'interventions';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'interventions', MAX(COALESCE((SELECT MAX(id) FROM interventions), 0),
                                COALESCE((SELECT MAX(seq) FROM interventions_seq_0011), 0));
DROP TABLE interventions_seq_0011;

CREATE INDEX interventions_pending ON interventions (status, task_name);
