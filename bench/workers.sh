#!/usr/bin/env bash
# Workers on one PostgreSQL: runs per minute with 1, 2 and 4 `attractor
# worker` processes sharing a database's queue (issue 18's scale table).
#
#   bench/workers.sh [BIN] [--suites 8] [--epochs 2] [--tasks 4] [--seconds 0.5]
#
# A throwaway cluster (scripts/pg-cluster.sh) gets one fresh database per
# row. Each row queues the same suites (`attractor run --queue`), starts the
# workers with `--until-idle` and times them until the last one exits: the
# runs it recorded over the wall time. Two kinds of task, side by side:
#   wait — `sleep S`, a task that waits (a model call, a remote evaluator);
#   cpu  — a sum that takes S seconds on one free core, a task that needs one.
# One suite runs on one worker at a time, so the suites are what spreads.
# Prints a Markdown table; bench/README.md keeps the measured one.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-${CARGO_TARGET_DIR:-target}/release/attractor}
shift || true
suites=8 epochs=2 tasks=4 seconds=0.5
while [ $# -gt 0 ]; do
  case "$1" in
    --suites) suites=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --tasks) tasks=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) echo "usage: bench/workers.sh [BIN] [--suites N] [--epochs N] [--tasks N] [--seconds S]" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "workers: no binary at $bin (cargo build --release, or give its path)" >&2; exit 1; }
work=$(mktemp -d)
pgdir=$(mktemp -d)   # its own: the cluster's owner must reach it
trap 'scripts/pg-cluster.sh stop "$pgdir"; rm -rf "$work" "$pgdir"' EXIT
base=$(scripts/pg-cluster.sh start "$pgdir")

# The cpu tasks' work: a sum that takes `seconds` on one free core here.
cpu_n=$(python3 - "$seconds" <<'EOF'
import sys, time
t = time.perf_counter(); sum(range(10**7)); t = time.perf_counter() - t
print(int(10**7 * float(sys.argv[1]) / t))
EOF
)

# The suites of one kind: `suites` files, `tasks` tasks each.
write_suites() {
  local kind=$1 dir=$2
  mkdir -p "$dir"
  for s in $(seq 1 "$suites"); do
    {
      echo "name: $kind-$s"
      echo "tasks:"
      for t in $(seq 1 "$tasks"); do
        echo "  - name: t$t"
        if [ "$kind" = wait ]; then
          echo "    command: sleep $seconds"
        else
          echo "    command: python3 -c 'sum(range($cpu_n))'"
        fi
      done
    } > "$dir/$kind-$s.suite.yaml"
  done
}

runs=$((suites * epochs * tasks))
echo "| tasks | workers | runs | wall (s) | runs / min | vs 1 worker |"
echo "|---|---|---|---|---|---|"
for kind in wait cpu; do
  write_suites "$kind" "$work/$kind"
  for n in 1 2 4; do
    db="$base/$kind$n"
    psql -q "$base/postgres" -c "CREATE DATABASE $kind$n"
    for f in "$work/$kind"/*.suite.yaml; do
      ATTRACTOR_RUNS_DIR="$work/runs" "$bin" --db "$db" --quiet run "$f" --epochs "$epochs" --seed 1 --queue
    done
    start=$(date +%s.%N)
    pids=()
    for _ in $(seq 1 "$n"); do
      ATTRACTOR_RUNS_DIR="$work/runs" "$bin" --db "$db" --quiet worker --until-idle &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || true; done
    end=$(date +%s.%N)
    done_runs=$(psql -tA "$db" -c "SELECT COUNT(*) FROM runs WHERE status <> 'running'")
    [ "$done_runs" -eq "$runs" ] || echo "workers: $kind with $n worker(s) recorded $done_runs of $runs runs" >&2
    # The row, and (for one worker) the rate the others are compared with.
    python3 - "$kind" "$n" "$done_runs" "$start" "$end" "$work/one-$kind" <<'EOF'
import sys
kind, n, runs, start, end, one_file = sys.argv[1:]
wall = float(end) - float(start)
rate = int(runs) / wall * 60
if n == "1":
    open(one_file, "w").write(str(rate))
one = float(open(one_file).read())
print(f"| {kind} | {n} | {runs} | {wall:.1f} | {rate:.0f} | {rate / one:.2f}x |")
EOF
  done
done
