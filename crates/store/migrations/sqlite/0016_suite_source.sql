-- The suite file a suite was last run from (by `attractor run`, a launch from
-- the app or the watcher), so "Launch again" works for a suite whose first
-- run came from the command line.
ALTER TABLE task_suites ADD COLUMN source_path TEXT;
