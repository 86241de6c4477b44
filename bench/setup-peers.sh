#!/usr/bin/env bash
# Creates (or reuses) the Python virtual environment bench/peers.py runs in and
# installs the pinned peer optimizers (bench/peers-requirements.txt) into it.
#
#   bench/setup-peers.sh            # prints the venv's python on stdout
#   PY=$(bench/setup-peers.sh) && "$PY" bench/peers.py --attractor target/release/attractor ...
#
# The venv lives at $ATTRACTOR_BENCH_VENV (default ~/.cache/attractor/bench-venv).
# A second run is quick: a stamp in the venv records the requirements it was
# built from, and pip is only called when they changed. Progress goes to
# stderr so stdout carries nothing but the python path.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
requirements="$here/peers-requirements.txt"
venv="${ATTRACTOR_BENCH_VENV:-$HOME/.cache/attractor/bench-venv}"
python="$venv/bin/python"
stamp="$venv/.peers-requirements.sha256"

if ! command -v python3 >/dev/null 2>&1; then
    echo "error: python3 is not installed; install it (Debian: apt-get install python3 python3-venv) and run again" >&2
    exit 2
fi

want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ -x "$python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "$python"
    exit 0
fi

if [[ ! -x "$python" ]]; then
    echo "creating the virtual environment $venv" >&2
    if ! python3 -m venv "$venv" >&2; then
        echo "error: python3 -m venv failed; on Debian install python3-venv (apt-get install python3-venv) and run again" >&2
        exit 1
    fi
fi
echo "installing $(grep -cv '^\s*\(#\|$\)' "$requirements") pinned packages from $requirements" >&2
"$python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
# Checks that the modules import, so a half-installed venv is not stamped as good.
"$python" -c 'import numpy, scipy, nlopt, gepa, yaml' >&2
echo "$want" > "$stamp"
echo "$python"
