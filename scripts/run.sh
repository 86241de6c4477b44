#!/usr/bin/env bash
# The main job: build Attractor, run the bundled example suite through the
# outer loop (12 epochs of `evolve` on the descent-tuning suite), show what it
# learned, then open the app on it: the desktop window when there is a
# display, else the same screens served to a browser at http://127.0.0.1:7300/.
#
#   scripts/run.sh                      # example, then the app
#   ATTRACTOR_NO_APP=1 scripts/run.sh   # example only
#   scripts/run.sh inspect descent-tuning   # extra arguments go to `attractor`
#   ATTRACTOR_LOCAL_LLM=1 scripts/run.sh    # the same with a local model (no account):
#       also the support-triage suite under textgrad, and the app's launches use the model
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

cargo build --locked --quiet
bin="$CARGO_TARGET_DIR/debug/attractor"

if [ -n "${ATTRACTOR_LOCAL_LLM:-}" ]; then
  # llama.cpp's server with SmolLM2 on loopback (built and fetched once, 10–15 min);
  # it keeps running for the app: `scripts/local-llm.sh stop` stops it.
  ensure_model_toolchain
  eval "$(scripts/local-llm.sh start)"
fi

if [ $# -gt 0 ]; then
  exec "$bin" "$@"
fi

"$bin" run examples/descent.suite.yaml --epochs 12 --optimizer evolve --seed 7
if [ -n "${ATTRACTOR_LOCAL_LLM:-}" ]; then
  echo
  "$bin" run examples/support-triage.suite.yaml --epochs 3 --optimizer textgrad
fi
echo
"$bin" inspect
echo
echo "Next: '$bin inspect descent-tuning' for every epoch, '$bin inspect --artifact descent_settings' for the learned versions."

if [ -n "${ATTRACTOR_NO_APP:-}" ]; then
  exit 0
fi

# The app shows the same database: the suite just run is on its Suites screen.
ensure_ui_toolchain
npm run --silent build
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  ensure_desktop_toolchain
  echo "run: building the desktop app (the first build takes a few minutes)" >&2
  cargo build --locked --quiet -p attractor-desktop
  echo "run: opening the Attractor window; close it to finish" >&2
  exec "$CARGO_TARGET_DIR/debug/attractor-desktop"
fi
port="${ATTRACTOR_PORT:-7300}"
echo "run: no display here, so the app is served to a browser instead: open http://127.0.0.1:$port/ (Ctrl-C stops)" >&2
exec "$bin" serve --port "$port"
