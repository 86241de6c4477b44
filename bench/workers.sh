#!/usr/bin/env bash
# Workers on one PostgreSQL: runs per minute with 1, 2 and 4 `attractor
# worker` processes sharing a database's queue (issue 18's scale table).
#
#   bench/workers.sh [BIN] [--suites 8] [--epochs 2] [--tasks 4] [--seconds 0.5]
#   bench/workers.sh [BIN] --wide      # one suite on many workers (issue 38)
#
# A throwaway cluster (scripts/pg-cluster.sh) gets one fresh database per
# row. Each row queues the same suites (`attractor run --queue`), starts the
# workers with `--until-idle` and times them until the last one exits: the
# runs it recorded over the wall time. Two kinds of task, side by side:
#   wait — `sleep S`, a task that waits (a model call, a remote evaluator);
#   cpu  — a sum that takes S seconds on one free core, a task that needs one.
# The default table spreads suites; `--wide` spreads one suite's runs over
# many workers (each one run at a time): 1-second tasks, each row against
# its ideal wall time (the runs over the workers, epoch after epoch). Wall
# is from the workers' start to the last one's exit; queue wall from the
# first run's start to the last epoch's close, on the database's clock (the
# workers' start-up left out). "Not in a task" is the share of the workers'
# queue-wall time not spent in a task (claims, the store, epoch closes,
# waiting for the next epoch); "run record" the mean time a run spends in
# the store around its task (recorded as started, claimed to it, finished
# with its epoch row); epoch close the last run's end to the epoch's
# close; with instant tasks, runs per second is what the queue passes
# (bench/workers_row.py makes each row).
# Prints a Markdown table; bench/README.md keeps the measured one.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-${CARGO_TARGET_DIR:-target}/release/attractor}
shift || true
suites=8 epochs=2 tasks=4 seconds=0.5 wide=0
while [ $# -gt 0 ]; do
  case "$1" in
    --wide) wide=1; shift ;;
    --suites) suites=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --tasks) tasks=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) echo "usage: bench/workers.sh [BIN] [--suites N] [--epochs N] [--tasks N] [--seconds S] | [BIN] --wide" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "workers: no binary at $bin (cargo build --release, or give its path)" >&2; exit 1; }
work=$(mktemp -d)
pgdir=$(mktemp -d)   # its own: the cluster's owner must reach it
trap 'scripts/pg-cluster.sh stop "$pgdir"; rm -rf "$work" "$pgdir"' EXIT
base=$(scripts/pg-cluster.sh start "$pgdir")

# Starts `n` workers on database `db` with `--until-idle` and waits for the
# last to exit; sets `start` and `end` (seconds since 1970) around them.
work_until_idle() {
  local db=$1 n=$2 pids=()
  start=$(date +%s.%N)
  for _ in $(seq 1 "$n"); do
    ATTRACTOR_RUNS_DIR="$work/runs" "$bin" --db "$db" --quiet worker --until-idle &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || true; done
  end=$(date +%s.%N)
}

# One row of the wide table: `nsuites` suites of `ntasks` tasks running
# `cmd` for `ep` epochs, worked by `n` workers; `secs` is a task's length.
wide_row() {
  local label=$1 nsuites=$2 ntasks=$3 cmd=$4 secs=$5 n=$6 ep=$7
  local name="w$(date +%s%N)" dir="$work/$RANDOM$RANDOM"
  mkdir -p "$dir"
  psql -q "$base/postgres" -c "CREATE DATABASE $name"
  local db="$base/$name"
  for s in $(seq 1 "$nsuites"); do
    {
      echo "name: wide-$s"
      echo "tasks:"
      for t in $(seq 1 "$ntasks"); do
        echo "  - name: t$t"
        echo "    command: $cmd"
      done
    } > "$dir/wide-$s.suite.yaml"
    ATTRACTOR_RUNS_DIR="$work/runs" "$bin" --db "$db" --quiet run "$dir/wide-$s.suite.yaml" --epochs "$ep" --seed 1 \
      --concurrency 1 --queue >/dev/null
  done
  local start end
  work_until_idle "$db" "$n"
  local stats
  stats=$(psql -tA -F ' ' "$db" -c "
    SELECT (SELECT COUNT(*) FROM epoch_runs),
           (SELECT COALESCE(SUM(duration_ms), 0) FROM runs r JOIN epoch_runs er ON er.run_id = r.id),
           (SELECT COUNT(DISTINCT worker) FROM runs),
           (SELECT COALESCE(AVG(EXTRACT(EPOCH FROM (CAST(e.completed_at AS timestamptz)
                     - (SELECT MAX(CAST(r.finished_at AS timestamptz)) FROM runs r WHERE r.epoch_id = e.id)))), 0)
            FROM epochs e WHERE e.completed_at IS NOT NULL),
           (SELECT EXTRACT(EPOCH FROM (MAX(CAST(e.completed_at AS timestamptz)) - MIN(CAST(r.started_at AS timestamptz))))
            FROM epochs e, runs r),
           (SELECT COALESCE(AVG(EXTRACT(EPOCH FROM (CAST(r.finished_at AS timestamptz) - CAST(r.started_at AS timestamptz))) * 1000
                     - r.duration_ms), 0)
            FROM runs r JOIN epoch_runs er ON er.run_id = r.id)")
  python3 bench/workers_row.py "$label" "$n" "$start" "$end" "$nsuites" "$ntasks" "$ep" "$secs" $stats
}

if [ "$wide" = 1 ]; then
  echo "| shape | workers | runs | workers used | wall (s) | queue wall (s) | ideal (s) | queue wall / ideal | not in a task | run record (ms) | epoch close (ms) | runs / s |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  wide_row "1 suite × 12 tasks of 1 s" 1 12 "sleep 1" 1 1 2
  wide_row "1 suite × 12 tasks of 1 s" 1 12 "sleep 1" 1 4 2
  wide_row "16 suites × 4 tasks of 1 s" 16 4 "sleep 1" 1 16 2
  wide_row "1 suite × 64 tasks of 1 s" 1 64 "sleep 1" 1 16 2
  wide_row "1 suite × 64 tasks of 1 s" 1 64 "sleep 1" 1 64 2
  for n in 1 4 16 64; do
    wide_row "1 suite × 256 instant tasks" 1 256 "'true'" 0 "$n" 1
  done
  exit 0
fi

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
    work_until_idle "$db" "$n"
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
