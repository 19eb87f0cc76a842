#!/usr/bin/env bash
# The full race soak: 64 takeovers of one seal x TRIALS, and mixed racers x TRIALS
# (default 1000 each). Prints the figures; fails on any violation.
#
# `scripts/soak.sh coordinator [SECONDS]`: the coordinator soak instead (benches/soak.rs):
# 1,000 controllers against the release server, SECONDS per store (default 180), on SQLite
# and on Redis + Postgres; prints sizes and latency six times per store.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = coordinator ]; then
    export WRITERCTL_SOAK_SECONDS="${2:-180}"
    exec cargo bench --bench soak
fi
export WRITERCTL_SOAK_TRIALS="${1:-1000}"
cargo test --release --test it soak:: -- --nocapture --test-threads 1 2>&1 | grep -oE "soak: .*|test result.*|panicked.*|FAILED.*"
