-- Every proposal an optimizer considered at the end of an epoch — the winner
-- and the rest, rejected ones with the reason — so the app can set what the
-- optimizer predicted against what the next epoch observed, and the next
-- proposal for the same artifact can learn from the earlier ones (momentum).
CREATE TABLE proposals (
    id                      INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_id                INTEGER NOT NULL REFERENCES task_suites(id),
    epoch_id                INTEGER NOT NULL REFERENCES epochs(id),
    optimizer               TEXT NOT NULL,
    artifact                TEXT NOT NULL,
    parent_version          INTEGER NOT NULL,
    content                 TEXT,
    rationale               TEXT,
    expected_loss_reduction REAL,
    confidence              REAL,
    outcome                 TEXT NOT NULL CHECK (outcome IN ('winner', 'candidate', 'rejected')),
    rejection               TEXT,
    learning_rate           REAL NOT NULL,
    -- The version the winner became; NULL for the others.
    applied_version         INTEGER,
    -- Filled in when the next epoch closes: previous mean loss minus the new one.
    observed_loss_reduction REAL,
    rolled_back             INTEGER NOT NULL DEFAULT 0,
    created_at              TEXT NOT NULL
);
CREATE INDEX proposals_by_suite ON proposals (suite_id, epoch_id);
CREATE INDEX proposals_by_artifact ON proposals (artifact, id);
