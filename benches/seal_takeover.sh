#!/usr/bin/env bash
# Seal and certified takeover of a large transcript against `openssl dgst -sha256` of the
# same file, measured in the same run, plus writerctl's peak RSS.
#
#   benches/seal_takeover.sh [SIZE_MIB]      (default 1024 = 1 GiB)
#
# Targets: seal and takeover each <= 1.10x openssl's time; peak RSS <= 16 MiB.
# The file is read from the page cache in every measurement (a warm-up read comes first),
# so the ratio compares hashing and protocol overhead, not the disk.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB="${1:-1024}"
ROUNDS="${ROUNDS:-3}"
cargo build --release --quiet
W="$PWD/target/release/writerctl"
BASE="${WRITERCTL_BENCH_DIR:-$PWD/target/bench-seal}"
mkdir -p "$BASE"
R="$(mktemp -d "$BASE/run.XXXXXX")"
trap 'kill "${HOLDERS[@]}" 2>/dev/null || true; rm -rf "$R"' EXIT
HOLDERS=()
export WRITERCTL_RUNTIME_DIR="$R" WRITERCTL_SESSION_WRITER_LEASE=1
mkdir -p "$R/chats"
T="$R/chats/bench.jsonl"
# 1 MiB of JSON lines, repeated.
python3 - "$T" "$SIZE_MIB" <<'PY'
import sys
path, mib = sys.argv[1], int(sys.argv[2])
line = b'{"role":"assistant","content":"' + b"x" * 90 + b'"}\n'
chunk = line * ((1 << 20) // len(line))
chunk += b"y" * ((1 << 20) - len(chunk) - 1) + b"\n"
with open(path, "wb") as f:
    for _ in range(mib):
        f.write(chunk)
PY
cat "$T" > /dev/null

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

openssl_times=(); seal_times=(); takeover_times=(); seal_rss=(); takeover_rss=()
for i in $(seq "$ROUNDS"); do
  s=$(now); openssl dgst -sha256 "$T" > /dev/null; e=$(now)
  openssl_times+=("$(echo "$e - $s" | bc -l)")

  sleep 1000 & HOLDERS+=($!); h1=$!
  "$W" acquire --session "bench$i" --managed --pid "$h1" --token-file "$R/t$i" --transcript-key chats/bench.jsonl > /dev/null
  out=$( { /usr/bin/time -f "%e %M" "$W" seal --session "bench$i" --token-file "$R/t$i" --transcript-key chats/bench.jsonl > /dev/null; } 2>&1 | tail -1)
  seal_times+=("${out% *}"); seal_rss+=("${out#* }")

  sleep 1000 & HOLDERS+=($!); h2=$!
  out=$( { /usr/bin/time -f "%e %M" "$W" takeover --session "bench$i" --pid "$h2" --token-file "$R/n$i" --transcript-key chats/bench.jsonl > /dev/null; } 2>&1 | tail -1)
  takeover_times+=("${out% *}"); takeover_rss+=("${out#* }")
done

o=$(printf '%s\n' "${openssl_times[@]}" | median)
s=$(printf '%s\n' "${seal_times[@]}" | median)
t=$(printf '%s\n' "${takeover_times[@]}" | median)
srss=$(printf '%s\n' "${seal_rss[@]}" | sort -g | tail -1)
trss=$(printf '%s\n' "${takeover_rss[@]}" | sort -g | tail -1)
sha_ni=$(grep -qw sha_ni /proc/cpuinfo && echo yes || echo no)
echo "seal/takeover bench: ${SIZE_MIB} MiB transcript, ${ROUNDS} rounds (median), CPU sha_ni: $sha_ni"
printf '  openssl dgst -sha256:   %8.3f s\n' "$o"
printf '  writerctl seal:         %8.3f s   ratio %.3fx (target <= 1.10x)   peak RSS %d KiB\n' "$s" "$(echo "$s / $o" | bc -l)" "$srss"
printf '  writerctl takeover:     %8.3f s   ratio %.3fx (target <= 1.10x)   peak RSS %d KiB\n' "$t" "$(echo "$t / $o" | bc -l)" "$trss"
