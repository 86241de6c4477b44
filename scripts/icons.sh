#!/usr/bin/env bash
# Regenerates the desktop app's icons (icons/*.png, .ico, .icns) from the
# committed source image icons/icon.svg with the Tauri CLI (`npm run icons`).
# Only the desktop sizes are kept: the CLI also writes Android, iOS and
# Windows Store sets this app does not ship.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
npx --no-install tauri icon icons/icon.svg --output "$out" >"$out/log" 2>&1 || { cat "$out/log" >&2; exit 1; }
for f in 32x32.png 64x64.png 128x128.png 128x128@2x.png icon.png icon.ico icon.icns; do
  cp "$out/$f" "icons/$f"
done
echo "icons: regenerated $(ls icons | tr '\n' ' ')"
