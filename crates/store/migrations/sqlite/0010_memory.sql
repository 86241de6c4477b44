-- Convergence memory (seed 002 Part 8): what every finished agent trajectory
-- teaches later trajectories of the same task category. A success memory
-- keeps the strategies that made progress and their order, the attractors met
-- and what escaped them, the overseer signals that moved; a failure memory
-- keeps the terminal attractor, the strategies tried, the causes and the gaps
-- never closed. PREPARE recalls the newest memories of a category to prime
-- the bandit and the executor's prompts.

CREATE TABLE memories (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    -- One memory per trajectory: ending it again (a resumed run redoing the
    -- end's bookkeeping) rewrites the same row.
    trajectory_id TEXT    NOT NULL UNIQUE REFERENCES trajectories(id),
    run_id        INTEGER NOT NULL REFERENCES runs(id),
    suite_id      INTEGER NOT NULL REFERENCES task_suites(id),
    category      TEXT    NOT NULL,
    outcome       TEXT    NOT NULL CHECK (outcome IN ('success', 'failure')),
    task_name     TEXT    NOT NULL,
    -- The task signature: the task text's keywords, sorted, space-separated
    -- (what similarity between tasks is measured on).
    signature     TEXT    NOT NULL,
    complexity    TEXT,
    -- The trajectory's terminal status (converged, accepted_partial, exhausted, ...).
    status        TEXT    NOT NULL,
    iterations    INTEGER NOT NULL,
    tokens_used   INTEGER NOT NULL,
    final_level   REAL    NOT NULL,
    -- Failures are worth more than successes (0.9 against 0.8, as in the seed).
    relevance     REAL    NOT NULL,
    -- The memory in a paragraph, for people and prompts.
    content       TEXT    NOT NULL,
    -- The structured memory (strategies, attractor path, escapes, signals, gaps).
    details_json  TEXT    NOT NULL,
    created_at    TEXT    NOT NULL
);
CREATE INDEX memories_by_category ON memories (category, id);

-- The trajectory repository's queries (seed 002 §10.2) group finished
-- trajectories by category.
CREATE INDEX trajectories_by_category ON trajectories (category, status);
