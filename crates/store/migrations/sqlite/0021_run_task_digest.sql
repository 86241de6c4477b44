-- What each run's task was when it ran: a digest of the task's definition
-- in the suite file. A resumed epoch compares it with the file as it is now
-- and runs a changed task again instead of counting a run of its old
-- definition. NULL on runs recorded before this column (counted as before).
ALTER TABLE runs ADD COLUMN task_digest TEXT;
