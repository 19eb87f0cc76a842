#!/usr/bin/env bash
# The full race soak: 64 takeovers of one seal x TRIALS, and mixed racers x TRIALS
# (default 1000 each). Prints the figures; fails on any violation.
set -euo pipefail
cd "$(dirname "$0")/.."
export WRITERCTL_SOAK_TRIALS="${1:-1000}"
cargo test --release --test it soak:: -- --nocapture --test-threads 1 2>&1 | grep -oE "soak: .*|test result.*|panicked.*|FAILED.*"
