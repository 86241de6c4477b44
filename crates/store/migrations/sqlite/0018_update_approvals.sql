-- The approval gate: under a run's or a suite's `approve_updates` setting an
-- optimizer's winning update does not become active when its epoch closes;
-- it waits here, with what a person needs to judge it (the proposed
-- content, the rationale, the predicted loss reduction and the epoch's
-- evidence), until a person approves it (as proposed or edited) or rejects
-- it. The run that proposed it applies an approved update at an epoch's
-- close, so the next epoch verifies it like any other update.
CREATE TABLE update_approvals (
    id                      INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_id                INTEGER NOT NULL REFERENCES task_suites(id),
    epoch_id                INTEGER NOT NULL REFERENCES epochs(id),
    artifact                TEXT NOT NULL,
    parent_version          INTEGER NOT NULL,
    proposed_content        TEXT NOT NULL,
    proposed_version        INTEGER,            -- an existing version to activate (the tree search's best), else NULL
    rationale               TEXT NOT NULL,
    expected_loss_reduction REAL,
    confidence              REAL,
    optimizer               TEXT NOT NULL,
    evidence_json           TEXT NOT NULL,   -- the epoch's mean loss, η and task losses (JSON)
    mode                    TEXT NOT NULL CHECK (mode IN ('wait', 'continue')),
    status                  TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'applied')),
    created_at              TEXT NOT NULL,
    decided_at              TEXT,
    decided_content         TEXT,            -- what was approved: the proposal or a person's edit of it
    edited                  INTEGER NOT NULL DEFAULT 0,
    reason                  TEXT,            -- a person's words with the decision
    applied_version         INTEGER,
    applied_epoch_id        INTEGER,
    intervention_id         INTEGER REFERENCES interventions(id)  -- the Inbox question that asks for the decision
);
CREATE INDEX update_approvals_by_suite ON update_approvals (suite_id, status);
