#!/usr/bin/env bash
# OpenAPI-driven fuzzing of `writerctl coordinator serve` with schemathesis (from PyPI):
# every operation in /openapi.json gets generated requests (and wrong methods); the run
# fails on any 5xx, on a status code the document does not list, and on any answer that
# leaves its documented schema — for errors, the envelope {"error":{"code","message","hint"}}
# with a code from the registry (issue 19: no answer leaves the envelope).
#
#   scripts/fuzz_api.sh [MAX_EXAMPLES]      (default 200 per operation)
#
# Runs against the embedded store in a scratch directory; installs schemathesis into
# target/fuzz-api-venv on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
examples="${1:-200}"
cargo build --quiet
venv=target/fuzz-api-venv
if [ ! -x "$venv/bin/schemathesis" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet 'schemathesis>=4.32,<5'
fi
work="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
./target/debug/writerctl coordinator admin-token new --out "$work/admin.token"
./target/debug/writerctl coordinator serve --listen 127.0.0.1:0 --store "sqlite:$work/c.sqlite" \
    --admin-token-file "$work/admin.token" >"$work/serve.out" 2>"$work/serve.log" &
server=$!
for _ in $(seq 100); do grep -q listening "$work/serve.out" && break; sleep 0.1; done
url="$(sed -n 's/^listening on //p' "$work/serve.out")"
echo "fuzzing $url ($examples examples per operation)"
"$venv/bin/schemathesis" run "$url/openapi.json" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,unsupported_method,allow_header_conformance \
    --max-examples "$examples" --seed 1 --request-timeout 40 \
    -H "Authorization: Bearer $(cat "$work/admin.token")"
