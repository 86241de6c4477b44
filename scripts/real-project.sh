#!/usr/bin/env bash
# Prints the folder of a pinned real open-source project, fetched once from
# its package registry and cached in ~/.cache/attractor/projects, for the
# tests whose verdicts must hold on projects no one here wrote
# (tests/real_projects.rs). Usage: scripts/real-project.sh NAME
#
#   more-itertools   Python, 817 unittest tests (PyPI sdist 10.5.0)
#   inflection       Python, 455 pytest tests (PyPI sdist 0.5.1)
#   aho-corasick     Rust, 265 cargo tests, 163 unit and 102 doc (crates.io 1.1.3)
#   pytest           pytest 8.3.3 installed into a folder for PYTHONPATH
set -euo pipefail
cache="${ATTRACTOR_CACHE:-$HOME/.cache/attractor}/projects"
mkdir -p "$cache"

if [ "${1:-}" = pytest ]; then
  # A folder to put on PYTHONPATH (the sandbox hides ~/.cache, so the
  # tests copy it beside their suite, which the sandbox lets checks read).
  lib="$cache/pytest-8.3.3-lib"
  if [ ! -f "$lib/.complete" ]; then
    rm -rf "$lib"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target "$lib" \
      pytest==8.3.3 pluggy==1.5.0 iniconfig==2.0.0 packaging==24.2 >&2
    touch "$lib/.complete"
  fi
  echo "$lib"
  exit 0
fi

# A crate from crates.io with a lock file and its dependencies fetched (so
# that the tests' sandboxed `cargo test --offline` runs find them and write
# no lock file into the workspace).
fetch_crate() {
  local name=$1 version=$2 sha256=$3
  local dest="$cache/$name-$version"
  if [ ! -f "$dest/.complete" ]; then
    tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    curl --proto '=https' --tlsv1.2 -sSfL -o "$tmp/$name.crate" "https://static.crates.io/crates/$name/$name-$version.crate"
    echo "$sha256  $tmp/$name.crate" | sha256sum --check --quiet - >&2 \
      || { echo "real-project: $name $version's crate is not the pinned one (sha256 differs)" >&2; exit 1; }
    tar -xzf "$tmp/$name.crate" -C "$tmp"
    (cd "$tmp/$name-$version" && cargo generate-lockfile --quiet && cargo fetch --quiet)
    rm -rf "$dest"
    mv "$tmp/$name-$version" "$dest"
    touch "$dest/.complete"
  fi
  echo "$dest"
}

case "${1:-}" in
  aho-corasick) fetch_crate aho-corasick 1.1.3 8e60d3430d3a69478ad0993f19238d2df97c507009a52b3c10addcd7f6bcb916; exit 0 ;;
esac

case "${1:-}" in
  more-itertools) pkg=more-itertools version=10.5.0 sha256=5482bfef7849c25dc3c6dd53a6173ae4795da2a41a80faea6700d9f5846c5da6 ;;
  inflection) pkg=inflection version=0.5.1 sha256=1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417 ;;
  *) echo "real-project: unknown project '${1:-}'; known: more-itertools, inflection, aho-corasick, pytest" >&2; exit 2 ;;
esac
dest="$cache/$pkg-$version"
if [ ! -f "$dest/.complete" ]; then
  tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: --dest "$tmp" "$pkg==$version" >&2
  archive=$(ls "$tmp"/*.tar.gz)
  echo "$sha256  $archive" | sha256sum --check --quiet - >&2 \
    || { echo "real-project: $pkg $version's archive is not the pinned one (sha256 differs)" >&2; exit 1; }
  tar -xzf "$archive" -C "$tmp"
  rm -rf "$dest"
  mv "$tmp/$(basename "$archive" .tar.gz)" "$dest"
  touch "$dest/.complete"
fi
echo "$dest"
