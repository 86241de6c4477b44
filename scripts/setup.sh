#!/usr/bin/env bash
# Installs what Attractor needs when it is missing, and sets the shared cargo
# target directory. Sourced by run.sh and test.sh; safe to run again.
#
# - a C compiler (the bundled SQLite is built from source), curl, git;
# - python3 (the bundled example harness is a Python script);
# - the Rust toolchain through rustup, when cargo is absent.
set -euo pipefail

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v curl >/dev/null 2>&1 || need_apt+=(curl ca-certificates)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup: installing the Rust toolchain with rustup" >&2
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >&2
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
fi

# One target directory outside the clone, so every clone on this machine (and
# CI) reuses the same build.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/attractor/target}"
mkdir -p "$CARGO_TARGET_DIR"
