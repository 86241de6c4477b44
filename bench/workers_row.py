"""One row of `bench/workers.sh --wide`'s table, from what the script timed
and what the database holds after the run (see the script's header)."""
import math
import sys

label, n, start, end, nsuites, ntasks, ep, secs, runs, busy_ms, used, close, queue_wall, record_ms = sys.argv[1:]
n, nsuites, ntasks, ep, secs = int(n), int(nsuites), int(ntasks), int(ep), float(secs)
wall = float(end) - float(start)
runs = int(runs)
expected = nsuites * ntasks * ep
# Ideal: every worker busy, and an epoch's runs cannot start before the one
# before it closed: a suite's epoch takes ceil(tasks / its workers) runs' time.
per_suite_workers = max(1, n // nsuites)
ideal = max(expected * secs / n, ep * math.ceil(ntasks / per_suite_workers) * secs)
queue_wall = float(queue_wall)
share = 1 - (float(busy_ms) / 1000) / (n * queue_wall)
ideal_col = f"{ideal:.1f}" if secs > 0 else "—"
ratio = f"{queue_wall / ideal:.2f}×" if secs > 0 else "—"
miss = "" if runs == expected else f" (of {expected})"
print(f"| {label} | {n} | {runs}{miss} | {used} | {wall:.1f} | {queue_wall:.1f} | {ideal_col} | {ratio} | "
      f"{share * 100:.0f}% | {float(record_ms):.0f} | {float(close) * 1000:.0f} | {runs / queue_wall:.1f} |")
