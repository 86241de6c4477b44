#!/usr/bin/env bash
# Builds the desktop app's installable packages, a .deb and an .rpm, so
# Attractor can be installed like any other program (issue 19, "Packaged").
#
# The Tauri CLI from node_modules (`npm run tauri`) runs the config's
# beforeBuildCommand (`npm run build`: the web UI into ui/dist), builds the
# release binary with cargo (--locked) into $CARGO_TARGET_DIR — outside the
# clone, so a second run reuses the build — and bundles both packages with its
# own Rust bundlers (no rpmbuild, no AppImage tool: the latter is downloaded
# from the internet, which these machines cannot reach). It prints the two
# packages' paths, one per line, on stdout; everything else goes to stderr.
#
# Usage: scripts/package.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ensure_ui_toolchain
ensure_desktop_toolchain

started=$SECONDS
bundle="$CARGO_TARGET_DIR/release/bundle"
# Old packages of another version would be found below instead of the new ones.
rm -rf "$bundle/deb" "$bundle/rpm"
# --ci: no prompts. Arguments after `--` go to cargo. The CLI refuses a tauri
# crate (Cargo.lock) and @tauri-apps packages (package.json) of different
# minor versions: keep them in step.
# The packages carry the CLI twin (`attractor`, the same core) and the
# bundled example suites beside the desktop app, so what the first screen
# tells a newcomer to run works on an installed machine.
cargo build --locked --release -p attractor >&2 || {
  echo "package: building the attractor CLI failed (above)" >&2
  exit 1
}
extras=$(printf '{"/usr/bin/attractor": "%s", "/usr/share/attractor/examples": "%s"}' \
  "$CARGO_TARGET_DIR/release/attractor" "$PWD/examples")
config=$(printf '{"bundle": {"linux": {"deb": {"files": %s}, "rpm": {"files": %s}}}}' "$extras" "$extras")
npm run --silent tauri -- build --ci --bundles deb,rpm --config "$config" -- --locked >&2 || {
  echo "package: the build failed (above); fix it, or check that scripts/setup.sh's ensure_desktop_toolchain installed WebKitGTK's headers" >&2
  exit 1
}

shopt -s nullglob
debs=("$bundle"/deb/*.deb)
rpms=("$bundle"/rpm/*.rpm)
if [ ${#debs[@]} -ne 1 ] || [ ${#rpms[@]} -ne 1 ]; then
  echo "package: expected one .deb and one .rpm under $bundle, found: ${debs[*]} ${rpms[*]}" >&2
  exit 1
fi
echo "package: built in $((SECONDS - started)) s" >&2
# What a package manager will be told (name, version, dependencies).
dpkg-deb -f "${debs[0]}" Package Version Depends Recommends Maintainer | sed 's/^/package: deb: /' >&2
if command -v rpm >/dev/null 2>&1; then
  rpm -qp --queryformat 'package: rpm: %{NAME} %{VERSION}-%{RELEASE} %{LICENSE}\n' "${rpms[0]}" >&2
  rpm -qpR "${rpms[0]}" | grep -v '^rpmlib(' | sed 's/^/package: rpm: requires /' >&2
fi
echo "${debs[0]}"
echo "${rpms[0]}"
