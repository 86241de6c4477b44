-- The experiment tree of `--optimizer tree` (seed 001): a node is a set of
-- artifact versions with its measured per-task losses. Every evaluation of a
-- node is an epoch (so charts and runs work as for any epoch); the node keeps
-- its first one. Nothing is deleted: discarded and pruned nodes stay.
CREATE TABLE tree_nodes (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_id          INTEGER NOT NULL REFERENCES task_suites(id),
    parent_id         INTEGER REFERENCES tree_nodes(id),
    epoch_id          INTEGER REFERENCES epochs(id),
    artifacts_json    TEXT NOT NULL,
    -- The one artifact this node changed against its parent (NULL for a root).
    changed_artifact  TEXT,
    from_version      INTEGER,
    to_version        INTEGER,
    brief             TEXT,
    mean_loss         REAL,
    holdout_mean_loss REAL,
    task_losses_json  TEXT,
    evaluations       INTEGER NOT NULL DEFAULT 0,
    status            TEXT NOT NULL CHECK (status IN ('committed', 'discarded', 'rejected', 'pruned')),
    note              TEXT,
    created_at        TEXT NOT NULL
);
CREATE INDEX tree_nodes_by_suite ON tree_nodes (suite_id, id);
