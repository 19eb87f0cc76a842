#!/usr/bin/env bash
# Exhaustive safety check of model/handoff.pml with spin.
#
#   bash model/check.sh                 # default configuration(s), see CONFIGS below
#   CONFIGS="MAXF=1,G=1" bash model/check.sh
#
# CONFIGS is a space-separated list; each entry is a comma-separated list of
# NAME=VALUE model tunables (G, MAXF, WAIT, ACQ, SEED, RESTART, NEGCACHE; see handoff.pml).
# Exits non-zero on any assertion violation, invalid end state, incomplete search
# or tool error.
#
# EXPECT_VIOLATION lists configurations of the same form in which pan must find a
# counterexample to a named property (NAME=VALUE,...:PROPERTY, PROPERTY being part of the
# text of the violated assertion): they show the model catches the known unsafe protocols
# of issue 27 — the claim checks answered from a client's cached "no such file"
# (reproduction 4: property 4) and a reclaim across pid namespaces on pod labels alone by
# a sidecar while the writer lives (reproduction 1: property 2, AUTH). The script fails if
# such a search finds no error, or another one.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
model="$here/handoff.pml"
CONFIGS="${CONFIGS:-MAXF=0,G=1 MAXF=0,G=1,WAIT=3,ACQ=3 MAXF=0,G=1,RESTART=1 MAXF=1,G=1,RESTART=1 MAXF=0,G=1,RESTART=1,SIDECAR=1}"
PAN_FLAGS="${PAN_FLAGS:--m200000 -w26}"
EXPECT_VIOLATION="${EXPECT_VIOLATION:-MAXF=0,G=1,NEGCACHE=1:!(ingap) MAXF=0,G=1,RESTART=1,SIDECAR=1,EVIDENCE=0:==certified[me]}"

if ! command -v spin >/dev/null 2>&1; then
    echo "spin not found; installing the Debian package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y spin >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y spin; }
fi
command -v gcc >/dev/null 2>&1 || { echo "gcc is required" >&2; exit 2; }

spin -V
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0

# build CFG DIR: the model with CFG's -D definitions (left in `defs` for a trail replay),
# compiled into DIR/pan.
build() {
    defs=()
    IFS=',' read -ra kvs <<<"$1"
    for kv in "${kvs[@]}"; do defs+=("-D$kv"); done
    mkdir -p "$2"
    cp "$model" "$2/handoff.pml"
    (cd "$2" && spin "${defs[@]}" -a handoff.pml) || { echo "spin -a failed for $1"; return 1; }
    (cd "$2" && gcc -O2 -DSAFETY -DCOLLAPSE -o pan pan.c) || { echo "gcc failed for $1"; return 1; }
}

for cfg in $CONFIGS; do
    dir="$work/$cfg"
    echo "== config $cfg"
    build "$cfg" "$dir" || { status=1; continue; }
    start=$(date +%s)
    # shellcheck disable=SC2086
    (cd "$dir" && ./pan $PAN_FLAGS) >"$dir/pan.out" 2>&1 || true
    secs=$(( $(date +%s) - start ))
    grep -E "State-vector|states, stored|states, matched|total actual memory|elapsed time" "$dir/pan.out" || true
    echo "wall time: ${secs}s"
    if ! grep -qE "errors: 0$" "$dir/pan.out"; then
        echo "FAIL ($cfg): pan reported errors"; status=1
        grep -E "^pan|assertion|error" "$dir/pan.out" | head -20 || true
        if ls "$dir"/*.trail >/dev/null 2>&1; then
            (cd "$dir" && spin "${defs[@]}" -t -p -g -l handoff.pml) | tail -80 || true
        fi
        continue
    fi
    if grep -qE "max search depth too small|reached -DMEMLIM|out of memory|hash table is full" "$dir/pan.out"; then
        echo "FAIL ($cfg): the search was not exhaustive"; status=1; continue
    fi
    grep -E "errors: 0$" "$dir/pan.out" | sed 's/^.*\(errors: 0\)$/\1/'
done

for entry in $EXPECT_VIOLATION; do
    cfg="${entry%%:*}"
    want="${entry#*:}"
    dir="$work/expect-$cfg"
    echo "== config $cfg (must violate $want)"
    build "$cfg" "$dir" || { status=1; continue; }
    # shellcheck disable=SC2086
    (cd "$dir" && ./pan $PAN_FLAGS) >"$dir/pan.out" 2>&1 || true
    if grep -F "assertion violated" "$dir/pan.out" | grep -qF -- "$want"; then
        echo "counterexample found, as expected: an assertion containing $want"
    else
        echo "FAIL ($cfg): expected a violation of $want"; status=1
        grep -E "^pan|assertion|errors" "$dir/pan.out" | head -10 || true
    fi
done

exit $status
