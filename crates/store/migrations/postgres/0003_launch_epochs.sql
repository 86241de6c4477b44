-- Which epochs a launch ran (the SQLite migration 0019_launch_epochs.sql says why).
ALTER TABLE run_requests ADD COLUMN first_epoch BIGINT;
ALTER TABLE run_requests ADD COLUMN last_epoch BIGINT;
