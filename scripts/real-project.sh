#!/usr/bin/env bash
# Prints the folder of a pinned real open-source project, fetched once from
# its package registry and cached in ~/.cache/attractor/projects, for the
# tests whose verdicts must hold on a project no one here wrote
# (tests/real_projects.rs). Usage: scripts/real-project.sh NAME
#
#   more-itertools   Python, 817 unittest tests (PyPI sdist 10.5.0)
set -euo pipefail
cache="${ATTRACTOR_CACHE:-$HOME/.cache/attractor}/projects"
case "${1:-}" in
  more-itertools) pkg=more-itertools version=10.5.0 sha256=5482bfef7849c25dc3c6dd53a6173ae4795da2a41a80faea6700d9f5846c5da6 ;;
  *) echo "real-project: unknown project '${1:-}'; known: more-itertools" >&2; exit 2 ;;
esac
dest="$cache/$pkg-$version"
if [ ! -f "$dest/.complete" ]; then
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --no-binary :all: --dest "$tmp" "$pkg==$version" >&2
  archive=$(ls "$tmp"/*.tar.gz)
  echo "$sha256  $archive" | sha256sum --check --quiet - >&2 \
    || { echo "real-project: $pkg $version's archive is not the pinned one (sha256 differs)" >&2; exit 1; }
  tar -xzf "$archive" -C "$tmp"
  rm -rf "$dest"
  mv "$tmp/$(basename "$archive" .tar.gz)" "$dest"
  touch "$dest/.complete"
fi
echo "$dest"
