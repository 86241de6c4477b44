-- The epochs a launch set out to do: its request's count, or, when it
-- continues a plan a stopped launch left unfinished, what was left of that
-- plan (a resumed launch of 3 epochs with one done does 2, not 3). NULL
-- until its run starts, and on requests recorded before this column.
ALTER TABLE run_requests ADD COLUMN epochs_planned BIGINT;
