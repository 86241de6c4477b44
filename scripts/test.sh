#!/usr/bin/env bash
# Every test: formatting check, then unit and integration tests (real SQLite
# files, real processes, the real binary).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --all -- --check || { echo "test: formatting differs; run 'cargo fmt'" >&2; exit 1; }
fi
cargo test --locked --all-targets
