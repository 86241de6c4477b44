-- A suite's latest launch is looked up by its name (the Suites screen reads
-- every suite's, the Launch screen one): without this index each lookup
-- scans the whole queue.
CREATE INDEX run_requests_by_suite ON run_requests (suite_name, id);
