#!/usr/bin/env bash
# Exhaustive safety check of model/handoff.pml with spin.
#
#   bash model/check.sh                 # default configuration(s), see CONFIGS below
#   CONFIGS="MAXF=1,G=1" EXPECT_VIOLATION= bash model/check.sh
#
# CONFIGS is a space-separated list; each entry is a comma-separated list of NAME=VALUE
# model tunables (G, MAXF, WAIT, ACQ, SEED, RESTART, SIDECAR, EVIDENCE, NEGCACHE, ESCAPE,
# LEASE, REPLACE, IDENTITY, RECOVER, HOLDERFIX, SUPKILL, REACH; see handoff.pml and
# README.md). Each must be searched exhaustively with no error: the script exits non-zero on
# any assertion violation, invalid end state, incomplete search or tool error.
#
# EXPECT_VIOLATION lists configurations of the form NAME=VALUE,...:TEXT in which pan must
# find a counterexample whose assertion text contains TEXT: the unsafe variants the model
# must catch (README.md, "Expected violations"), and one witness (REACH). The script fails
# if such a search finds no error, or another one.
#
# JOBS searches run at once (default: 2, or 1 on a one-core machine). Exhaustive searches
# with injected faults (MAXF other than 0, the largest) are compiled with PAN_CFLAGS; the
# others, and the searches that must fail, with SMALL_CFLAGS (-O0): for them gcc -O2 on
# pan.c costs more time than it saves.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
model="$here/handoff.pml"
# The plain configuration (MAXF=0,G=1) is contained in the second: SEED=2 adds initial states,
# RESTART=1 a SIGKILL of actor 0, and SIDECAR=1 lets actor 1 start at once, as it does without
# RESTART. The third also takes the bounds to 3 (WAIT, ACQ). The largest comes first, so that
# two jobs end at about the same time.
CONFIGS="${CONFIGS-MAXF=1,G=1,RESTART=1,SEED=0 MAXF=0,G=1,RESTART=1,SIDECAR=1,SEED=2 MAXF=0,G=1,WAIT=3,ACQ=3,REPLACE=1,RECOVER=3,SUPKILL=1,SEED=0}"
PAN_FLAGS="${PAN_FLAGS:--m200000 -w26}"
PAN_CFLAGS="${PAN_CFLAGS:--O2 -fno-gcse}"
SMALL_CFLAGS="${SMALL_CFLAGS:--O0}"
EXPECT_VIOLATION="${EXPECT_VIOLATION-\
MAXF=0,G=1,LEASE=0:two_writers \
MAXF=0,G=1,LEASE=2:two_writers \
MAXF=0,G=1,LEASE=3:two_writers \
MAXF=0,G=1,REPLACE=1,IDENTITY=0:live_holder_moved \
MAXF=0,G=1,REPLACE=1,RECOVER=2:live_holder_moved \
MAXF=0,G=1,REPLACE=1,RECOVER=1:live_holder_moved \
MAXF=0,G=1,HOLDERFIX=0,SUPKILL=1:live_holder_moved \
MAXF=0,G=1,RESTART=1,REACH=1:witness_reclaimed_after_handout \
MAXF=0,G=1,NEGCACHE=1:!(ingap) \
MAXF=0,G=1,RESTART=1,SIDECAR=1,EVIDENCE=0:==certified[me]}"
cores="$(nproc 2>/dev/null || echo 1)"
JOBS="${JOBS:-$(( cores >= 2 ? 2 : 1 ))}"

if ! command -v spin >/dev/null 2>&1; then
    echo "spin not found; installing the Debian package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y spin >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y spin; }
fi
command -v gcc >/dev/null 2>&1 || { echo "gcc is required" >&2; exit 2; }

spin -V
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# defs_of CFG: CFG's -D definitions, in the array `defs`.
defs_of() {
    defs=()
    local kvs kv
    IFS=',' read -ra kvs <<<"$1"
    for kv in "${kvs[@]}"; do defs+=("-D$kv"); done
}

# build CFG DIR CFLAGS: the model with CFG's definitions, compiled into DIR/pan.
build() {
    defs_of "$1"
    mkdir -p "$2"
    cp "$model" "$2/handoff.pml"
    (cd "$2" && spin "${defs[@]}" -a handoff.pml) || { echo "spin -a failed for $1"; return 1; }
    # shellcheck disable=SC2086
    (cd "$2" && gcc $3 -DSAFETY -DCOLLAPSE -o pan pan.c) || { echo "gcc failed for $1"; return 1; }
}

# exhaustive CFG DIR: a search that must find nothing. Prints its report; fails on an error.
exhaustive() {
    local cfg="$1" dir="$2" start secs
    local cflags="$PAN_CFLAGS"
    case ",$cfg," in *,MAXF=0,*) cflags="$SMALL_CFLAGS" ;; esac
    echo "== config $cfg"
    build "$cfg" "$dir" "$cflags" || return 1
    start=$(date +%s)
    # shellcheck disable=SC2086
    (cd "$dir" && ./pan $PAN_FLAGS) >"$dir/pan.out" 2>&1 || true
    secs=$(( $(date +%s) - start ))
    grep -E "State-vector|states, stored|states, matched|total actual memory|elapsed time" "$dir/pan.out" || true
    echo "search wall time: ${secs}s"
    if ! grep -qE "errors: 0$" "$dir/pan.out"; then
        echo "FAIL ($cfg): pan reported errors"
        grep -E "^pan|assertion|error" "$dir/pan.out" | head -20 || true
        if ls "$dir"/*.trail >/dev/null 2>&1; then
            defs_of "$cfg"
            (cd "$dir" && spin "${defs[@]}" -t -p -g -l handoff.pml) | tail -80 || true
        fi
        return 1
    fi
    if grep -qE "max search depth too small|reached -DMEMLIM|out of memory|hash table is full" "$dir/pan.out"; then
        echo "FAIL ($cfg): the search was not exhaustive"; return 1
    fi
    echo "errors: 0"
}

# violation CFG:TEXT DIR: a search that must report an assertion containing TEXT.
violation() {
    local cfg="${1%%:*}" want="${1#*:}" dir="$2"
    echo "== config $cfg (must violate $want)"
    build "$cfg" "$dir" "$SMALL_CFLAGS" || return 1
    # shellcheck disable=SC2086
    (cd "$dir" && ./pan $PAN_FLAGS) >"$dir/pan.out" 2>&1 || true
    if grep -F "assertion violated" "$dir/pan.out" | grep -qF -- "$want"; then
        echo "counterexample found, as expected: $(grep -oE 'at depth [0-9]+' "$dir/pan.out" | head -1), an assertion containing $want"
    else
        echo "FAIL ($cfg): expected a violation of $want"
        grep -E "^pan|assertion|errors" "$dir/pan.out" | head -10 || true
        return 1
    fi
}

# Run every search, JOBS at a time, each into its own log; then print the logs in order.
n=0
running=0
for cfg in $CONFIGS; do
    n=$((n + 1))
    ( exhaustive "$cfg" "$work/$n" >"$work/$n.log" 2>&1; echo $? >"$work/$n.rc" ) &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
done
for entry in $EXPECT_VIOLATION; do
    n=$((n + 1))
    ( violation "$entry" "$work/$n" >"$work/$n.log" 2>&1; echo $? >"$work/$n.rc" ) &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
done
wait

status=0
for i in $(seq 1 "$n"); do
    cat "$work/$i.log"
    [ "$(cat "$work/$i.rc" 2>/dev/null || echo 1)" = 0 ] || status=1
done
[ "$status" = 0 ] && echo "model/check.sh: all searches as required" || echo "model/check.sh: FAILED"
exit $status
