-- What steers the tree search (seed 001): the round that made each node,
-- the proposer's rationale, what a model may be told about how the change
-- fared (never held-out text or a pre-verify finding's quote), and the
-- direction its proposer was given (an ideation proposal, analyst hints).
ALTER TABLE tree_nodes ADD COLUMN round INTEGER;
ALTER TABLE tree_nodes ADD COLUMN rationale TEXT;
ALTER TABLE tree_nodes ADD COLUMN feedback TEXT;
ALTER TABLE tree_nodes ADD COLUMN guidance TEXT;

-- The analyst's hints and the ideation calls' proposals, per round: `round`
-- is the round whose briefs they fed. A hint is stored the round it first
-- appears; an ideation call that gave nothing usable leaves one row saying why.
CREATE TABLE tree_notes (
    id                      INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_id                INTEGER NOT NULL REFERENCES task_suites(id),
    round                   INTEGER NOT NULL,
    source                  TEXT NOT NULL CHECK (source IN ('analyst', 'frontier_extrapolation', 'failure_analysis')),
    -- analyst: saturated_axis | dead_direction; ideation: proposal | nothing
    kind                    TEXT NOT NULL,
    artifact                TEXT,
    parent_id               INTEGER REFERENCES tree_nodes(id),
    text                    TEXT NOT NULL,
    expected_loss_reduction REAL,
    confidence              REAL,
    -- The child an ideation proposal led to.
    node_id                 INTEGER REFERENCES tree_nodes(id),
    created_at              TEXT NOT NULL
);
CREATE INDEX tree_notes_by_suite ON tree_notes (suite_id, round, id);
