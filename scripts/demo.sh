#!/usr/bin/env bash
# A real lock lifecycle on a scratch runtime directory, no server needed:
# acquire -> status -> a competing acquire (conflict) -> release -> status.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet
W="$PWD/target/debug/writerctl"
R="$(mktemp -d "${TMPDIR:-/tmp}/writerctl-demo.XXXXXX")"
trap 'rm -rf "$R"' EXIT
SESSION="550e8400-e29b-41d4-a716-446655440000"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step writerctl acquire --runtime-dir "$R" --session "$SESSION" --token-file "$R/owner.token"
"$W" acquire --runtime-dir "$R" --session "$SESSION" --token-file "$R/owner.token"

step writerctl status --runtime-dir "$R" --session "$SESSION"
"$W" status --runtime-dir "$R" --session "$SESSION"

step writerctl acquire --runtime-dir "$R" --session "$SESSION" --json   "# a second writer"
set +e
"$W" acquire --runtime-dir "$R" --session "$SESSION" --json
echo "exit status: $? (3 = session_writer_conflict)"
set -e

step writerctl release --runtime-dir "$R" --session "$SESSION" --token-file "$R/owner.token"
"$W" release --runtime-dir "$R" --session "$SESSION" --token-file "$R/owner.token"

step writerctl status --runtime-dir "$R"
"$W" status --runtime-dir "$R"
