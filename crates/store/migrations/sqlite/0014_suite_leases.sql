-- One run of a suite at a time, across the CLI, `serve` and the desktop app:
-- a run holds its suite's lease while it works and heartbeats it. A lease
-- whose holder died (its process is gone, or its heartbeat is old) is taken
-- over; any other second run is refused with who holds the suite.
CREATE TABLE suite_leases (
    suite_id     INTEGER PRIMARY KEY REFERENCES task_suites(id),
    owner        TEXT NOT NULL,   -- "pid:nonce" of the holding run
    holder       TEXT NOT NULL,   -- for people: "attractor (pid 4242)"
    acquired_at  TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL
);
