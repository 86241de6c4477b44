#!/usr/bin/env bash
# The main job: build Attractor and run the bundled example suite through the
# outer loop (12 epochs of `evolve` on the descent-tuning suite), then show
# what it learned. Extra arguments go to `attractor` instead, e.g.
#   scripts/run.sh inspect descent-tuning
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh

cargo build --locked --quiet
bin="$CARGO_TARGET_DIR/debug/attractor"

if [ $# -gt 0 ]; then
  exec "$bin" "$@"
fi

"$bin" run examples/descent.suite.yaml --epochs 12 --optimizer evolve --seed 7
echo
"$bin" inspect
echo
echo "Next: '$bin inspect descent-tuning' for every epoch, '$bin inspect --artifact descent_settings' for the learned versions."
