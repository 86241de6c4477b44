#!/usr/bin/env bash
# Runs the fuzz targets of tests/fuzz.rs far longer than the test run does
# (which gives each 2,000 inputs): `bench/fuzz.sh [INPUTS_PER_TARGET]`
# (default 200,000). An input that fails is printed with its seed
# (BOLERO_RANDOM_SEED=… replays it); save it under
# tests/__fuzz__/fuzz/<target>/crashes/ to keep it as a regression case.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
export ATTRACTOR_FUZZ_ITERATIONS="${1:-200000}"
cargo test --locked --release --test fuzz -- --nocapture --test-threads=1 2>&1 |
    grep -E '^test |iterations/s|test result|panicked|Input'
