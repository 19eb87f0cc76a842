#!/usr/bin/env bash
# A full certified handoff on a scratch runtime directory, no server needed:
# writer A acquires and appends -> a competing writer is refused -> A seals (drain + proof)
# -> verify -> writer B takes over after validating the proof -> B releases.
set -euo pipefail
cd "$(dirname "$0")/.."
# Ask Cargo where the binary is instead of guessing: CARGO_TARGET_DIR, build.target-dir,
# --target triples and profiles all move it. The build's JSON messages name the executable
# of every bin artifact (diagnostics are still rendered, on stderr).
W="$(cargo build --quiet --bin writerctl --message-format=json-render-diagnostics |
  sed -n 's/^{"reason":"compiler-artifact".*"target":{"kind":\["bin"\][^}]*"name":"writerctl".*"executable":"\([^"]*\)".*/\1/p' |
  tail -n 1)"
if [ -z "$W" ] || [ ! -x "$W" ]; then
  echo "demo: cargo built no writerctl binary it could name (got '$W')" >&2
  exit 1
fi
R="$(mktemp -d "${TMPDIR:-/tmp}/writerctl-demo.XXXXXX")"
HOLDERS=()
trap 'kill "${HOLDERS[@]}" 2>/dev/null || true; rm -rf "$R"' EXIT
export WRITERCTL_RUNTIME_DIR="$R"
export WRITERCTL_SESSION_WRITER_LEASE=1     # the gate for seal and certified takeover
SID="550e8400-e29b-41d4-a716-446655440000"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

# Two stand-in writer processes; the lock records which one holds the session.
sleep 600 & A=$!; HOLDERS+=("$A")
sleep 600 & B=$!; HOLDERS+=("$B")

step writerctl acquire --managed --session "$SID" --pid "$A" --token-file "$R/a.token"
"$W" acquire --managed --session "$SID" --pid "$A" --token-file "$R/a.token"

step "writer A appends two lines to chats/$SID.jsonl"
mkdir -p "$R/chats"
printf '{"turn":1,"writer":"A"}\n{"turn":2,"writer":"A"}\n' >> "$R/chats/$SID.jsonl"

step writerctl acquire --session "$SID" --json   "# a second writer is refused"
set +e; "$W" acquire --session "$SID" --json; echo "exit status: $? (3 = session_writer_conflict)"; set -e

step writerctl seal --session "$SID" --token-file "$R/a.token"   "# A drained; certify the transcript"
"$W" seal --session "$SID" --token-file "$R/a.token"

step writerctl status --session "$SID"
"$W" status --session "$SID"

step writerctl verify --session "$SID"
"$W" verify --session "$SID"

step writerctl takeover --session "$SID" --pid "$B" --token-file "$R/b.token"   "# the replacement"
"$W" takeover --session "$SID" --pid "$B" --token-file "$R/b.token"

step "writer B appends"
printf '{"turn":3,"writer":"B"}\n' >> "$R/chats/$SID.jsonl"

step writerctl release --session "$SID" --token-file "$R/b.token"
"$W" release --session "$SID" --token-file "$R/b.token"

step writerctl status
"$W" status
