#!/usr/bin/env bash
# Property-based tests of `spool serve` against its own OpenAPI document:
# schemathesis generates requests from /openapi.json and fails on any 5xx or
# any answer that does not match the schema. Installs schemathesis into a
# venv under target/ on first use; exits non-zero on any failure.
#
# MAX_EXAMPLES (default 30) bounds the examples per operation, which keeps a
# run to a few minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
venv="$target/schemathesis-venv"
if [[ ! -x "$venv/bin/schemathesis" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet schemathesis
fi
"$venv/bin/schemathesis" --version

cargo build --quiet -p spool-cli --bin spool
work="$(mktemp -d)"
log="$work/serve.log"
"$target/debug/spool" serve --data "$work/data" --listen 127.0.0.1:0 2>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

# Port 0: the server logs the address the OS gave it.
addr=""
for _ in $(seq 1 100); do
  addr="$(sed -n 's|.*listening on http://\([0-9.:]*\).*|\1|p' "$log" | head -n 1)"
  [[ -n "$addr" ]] && break
  kill -0 "$server" 2>/dev/null || { cat "$log"; echo "spool serve exited" >&2; exit 1; }
  sleep 0.1
done
[[ -n "$addr" ]] || { cat "$log"; echo "spool serve did not start" >&2; exit 1; }

# --request-timeout: a claim long-polls up to 30 s by design.
"$venv/bin/schemathesis" run "http://$addr/openapi.json" \
  --checks not_a_server_error,response_schema_conformance \
  --max-examples "${MAX_EXAMPLES:-30}" \
  --request-timeout 35 \
  --generation-deterministic \
  --no-color
