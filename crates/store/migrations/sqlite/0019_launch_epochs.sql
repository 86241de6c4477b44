-- Which of its suite's epochs a launch ran (epoch numbers, first and last
-- started), so the Live screen can show a finished launch's epochs and runs
-- after a reload, and tell a launch whose every run failed from one that
-- did its work. NULL until the launch starts an epoch.
ALTER TABLE run_requests ADD COLUMN first_epoch INTEGER;
ALTER TABLE run_requests ADD COLUMN last_epoch INTEGER;
