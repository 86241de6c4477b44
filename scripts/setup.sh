#!/usr/bin/env bash
# Installs what Attractor needs when it is missing, and sets the shared cargo
# target directory. Sourced by run.sh and test.sh; safe to run again.
#
# - a C compiler (the bundled SQLite is built from source), curl, git;
# - python3 (the bundled example harness is a Python script);
# - bubblewrap (the sandbox of agent tasks' commands) and prlimit;
# - the Rust toolchain through rustup, when cargo is absent.
# It also defines ensure_ui_toolchain, ensure_desktop_toolchain and
# ensure_test_services for the scripts that build and test the web UI, the
# desktop app and the core.
set -euo pipefail

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v curl >/dev/null 2>&1 || need_apt+=(curl ca-certificates)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
# The sandbox agent tasks' overseers and command executors run in.
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v prlimit >/dev/null 2>&1 || need_apt+=(util-linux)

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

# The web UI's toolchain and browser, for scripts that build or test the UI
# (test.sh calls this; run.sh does not need it):
# - Node.js ≥ 20.19 and npm (Vite 8 needs them). The machine image ships
#   Node 20; Debian's own nodejs package (18) is too old, so a missing or old
#   Node is reported rather than papered over.
# - the npm packages, reinstalled with `npm ci` when package-lock.json is newer
#   than what node_modules holds;
# - Chromium for the end-to-end tests (playwright-core drives Debian's build:
#   Playwright's own browser downloads are not reachable here).
# The lint and format tools test.sh checks with (a minimal rustup profile
# has neither).
ensure_lint_toolchain() {
  if ! cargo clippy --version >/dev/null 2>&1 || ! cargo fmt --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
      echo "setup: adding clippy and rustfmt with rustup" >&2
      rustup component add clippy rustfmt >&2
    fi
  fi
}

ensure_ui_toolchain() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  local need=()
  command -v node >/dev/null 2>&1 || need+=(nodejs npm)
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  if [ ${#need[@]} -gt 0 ]; then
    echo "setup: installing ${need[*]}" >&2
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
  if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)'; then
    echo "setup: Node.js $(node --version) is too old for the UI build (Vite 8 needs ≥ 20.19); install a newer Node.js" >&2
    return 1
  fi
  if [ ! -f "$root/node_modules/.package-lock.json" ] || [ "$root/package-lock.json" -nt "$root/node_modules/.package-lock.json" ]; then
    echo "setup: installing the UI's npm packages (npm ci)" >&2
    (cd "$root" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

# The desktop app's build and test needs, for scripts that build the Tauri
# shell (test.sh calls this; run.sh does not need it): WebKitGTK 4.1 and GTK
# headers with the rest of Tauri's Debian prerequisites, a virtual X server
# (Xvfb) for the window, WebKitWebDriver to drive its webview, and ImageMagick,
# whose `import` takes the window tests' screenshots from the X screen (and
# `identify` checks them), and x11-utils, whose `xwininfo` lists the windows
# on that screen (a native dialog has no webview to drive). Only the packages
# not installed yet are fetched.
ensure_desktop_toolchain() {
  apt_install_missing pkg-config file libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libayatana-appindicator3-dev \
    libxdo-dev libssl-dev xvfb xauth imagemagick webkit2gtk-driver x11-utils
}

# What the Rust tests start for real (test.sh calls this before them): a D-Bus
# session bus and GNOME Keyring's Secret Service, which the keychain tests run
# privately to store, use and delete an API key; and Debian's PostgreSQL,
# whose initdb and pg_ctl the store's PostgreSQL tests use to start a
# throwaway cluster in a temporary folder (tests/common/pg.rs).
ensure_test_services() {
  apt_install_missing dbus-daemon dbus-bin gnome-keyring postgresql
}

# What scripts/local-llm.sh needs to build llama.cpp's server (test.sh calls
# this before the real-model tier): a C++ compiler and Python's venv, for
# the CMake and Ninja wheels the build uses.
ensure_model_toolchain() {
  command -v c++ >/dev/null 2>&1 || apt_install_missing g++
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || apt_install_missing python3-venv
}

# Installs the named Debian packages that are not installed yet.
apt_install_missing() {
  local need=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    echo "setup: installing ${need[*]}" >&2
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}
