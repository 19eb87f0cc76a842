#!/usr/bin/env bash
# Regenerates scripts/hot_functions.txt: the functions the one-shot lock-file commands run
# (seal and takeover first, then acquire, release, status, verify), as the linker's symbol
# names. build.rs hands the file to the linker (`--symbol-ordering-file`) for release builds,
# which lays those functions out together at the start of .text.
#
#   scripts/hot_functions.sh        (needs valgrind; builds --release first)
#
# Why (issue 38): the kernel maps a file page's neighbourhood when one page faults (64 KiB
# of fault-around, or the whole large folio the page cache holds it in). A `seal` executes
# about 280 distinct 4 KiB pages of writerctl's 15 MiB of code, but scattered over ~75
# such windows, so 4.5 MiB of the binary's code was resident at its peak. Packed together
# they take under 1 MiB, and the peak RSS of seal and takeover fell from 9-10 MiB to ~5 MiB.
#
# When to run it: after a toolchain or dependency upgrade, a version bump, or whenever
# benches/seal_takeover.sh shows the peak RSS creeping back towards 8 MiB. Symbol names carry
# a hash of the crate and compiler, so those changes rename functions; a name that no longer
# exists is ignored by the linker (the layout merely gets worse, never wrong). Nothing here
# changes what the binary does: the linker only orders functions.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind > /dev/null || { echo "hot_functions.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
cargo build --release --quiet
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
# The path the kernel reports for the mapped binary (callgrind names objects by it).
W="$(realpath "$TARGET_DIR/release/writerctl")"
OUT="scripts/hot_functions.txt"
R="$(mktemp -d)"
trap 'kill "${HOLDERS[@]}" 2>/dev/null || true; rm -rf "$R"' EXIT
HOLDERS=()
export WRITERCTL_RUNTIME_DIR="$R/rt" WRITERCTL_SESSION_WRITER_LEASE=1
mkdir -p "$R/rt/chats"
# A few MiB of JSON lines: the same read path as a 1 GiB transcript, in a second under valgrind.
python3 -c 'import sys; sys.stdout.buffer.write((b"{\"role\":\"assistant\",\"content\":\"" + b"x" * 90 + b"\"}\n") * 30000)' > "$R/rt/chats/t.jsonl"
n=0
trace() {
  n=$((n + 1))
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$R/cg.$(printf %03d $n)" "$W" "$@" > /dev/null 2>&1 || true
}
K=(--transcript-key chats/t.jsonl)
sleep 1000 & HOLDERS+=($!); h1=$!
sleep 1000 & HOLDERS+=($!); h2=$!
# seal and takeover first (benches/seal_takeover.sh's commands), then the other one-shots.
"$W" acquire --session s --managed --pid "$h1" --token-file "$R/t1" "${K[@]}" > /dev/null
trace seal --session s --token-file "$R/t1" "${K[@]}"
trace takeover --json --session s --pid "$h2" --token-file "$R/t2" "${K[@]}"
trace seal --json --session s --token-file "$R/t2" "${K[@]}"
trace takeover --session s --pid "$h2" --token-file "$R/t3" "${K[@]}"
trace status --session s "${K[@]}"
trace status --json --session s "${K[@]}"
trace verify --session s "${K[@]}"
trace release --session s --token-file "$R/t3"
trace acquire --session s --managed --pid "$h1" --token-file "$R/t4" "${K[@]}"
trace release --json --session s --token-file "$R/t4"
trace acquire --session p --pid "$h1" --token-file "$R/t5"
trace release --session p --token-file "$R/t5"
python3 - "$W" "$R"/cg.* > "$OUT" <<'PY'
import re, subprocess, sys
binary, files = sys.argv[1], sys.argv[2:]
names, seen = [], set()
for path in files:
    obs, fns, ob = {}, {}, None
    for line in open(path, errors="replace"):
        m = re.match(r"(c?)ob=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(3):
                obs[m.group(2)] = m.group(3).strip()
            if not m.group(1):
                ob = obs[m.group(2)]
            continue
        m = re.match(r"(c?)fn=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(3):
                fns[m.group(2)] = m.group(3).strip()
            if m.group(1) or ob != binary:
                continue
            name = re.sub(r"'\d+$", "", fns[m.group(2)])  # callgrind's recursion marker
            if name not in seen and not name.startswith("0x") and " " not in name:
                seen.add(name)
                names.append(name)
# Valgrind's CPU has no SHA extensions, so the traced runs hashed in software: add the
# SHA-NI and AVX variants the real machine dispatches to.
syms = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
for line in syms.splitlines():
    name = line.split()[-1]
    if re.search(r"sha2.*sha256.*compress", name) and name not in seen:
        seen.add(name)
        names.append(name)
print("\n".join(names))
PY
echo "wrote $OUT: $(wc -l < "$OUT") functions"
