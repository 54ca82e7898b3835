#!/usr/bin/env bash
# Real Redis clients against a real `spool serve` over RESP: redis-cli from
# a shell (enqueue, claim, ack), Python's redis package (a pipeline of
# 1,000 ENQUEUEs, then CLAIM and ACKMANY; RESP3 after HELLO 3) and Node's
# ioredis with its defaults (its ready check reads INFO). Installs redis-py
# into a venv under target/ and ioredis with `npm ci` (scripts/ioredis) on
# first use, both pinned; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
venv="$target/resp-venv"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import redis' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet redis==8.1.0
fi
if [[ ! -d scripts/ioredis/node_modules/ioredis ]]; then
  (cd scripts/ioredis && npm ci --silent --no-audit --no-fund)
fi

cargo build --quiet -p spool-cli --bin spool
work="$(mktemp -d)"
log="$work/serve.log"
"$target/debug/spool" serve --data "$work/data" --listen 127.0.0.1:0 --token interop-token 2>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

# Port 0: the server logs the addresses the OS gave it.
port=""; http=""
for _ in $(seq 1 100); do
  port="$(sed -n 's|.*RESP listening on 127.0.0.1:\([0-9]*\).*|\1|p' "$log" | head -n 1)"
  http="$(sed -n 's|.*listening on http://\([0-9.:]*\).*|\1|p' "$log" | head -n 1)"
  [[ -n "$port" && -n "$http" ]] && break
  kill -0 "$server" 2>/dev/null || { cat "$log"; echo "spool serve exited" >&2; exit 1; }
  sleep 0.1
done
[[ -n "$port" ]] || { cat "$log"; echo "spool serve did not start" >&2; exit 1; }

echo "== redis-cli"
cli() { redis-cli -p "$port" --no-auth-warning -a interop-token "$@"; }
expect() { [[ "$1" == "$2" ]] || { echo "expected '$2', got '$1'" >&2; exit 1; }; }
expect "$(redis-cli -p "$port" ENQUEUE mail x)" "UNAUTHORIZED authentication required: send AUTH <token> (or HELLO 3 AUTH default <token>)"
id="$(cli ENQUEUE mail '{"to":"a@example.com"}')"
[[ "$id" =~ ^[0-9]+$ ]] || { echo "ENQUEUE answered '$id'" >&2; exit 1; }
mapfile -t task < <(cli CLAIM mail WORKER cli)
expect "${task[0]}" "id"; expect "${task[1]}" "$id"; expect "${task[8]}" "payload"
expect "${task[9]}" '{"to":"a@example.com"}'
expect "$(cli ACK "$id" 0000000000000000)" "LEASE_LOST lease lost: the token is not the task's current lease"
expect "$(cli ACK "$id" "${task[3]}")" "OK"
expect "$(cli GET "$id")" "NOT_FOUND task not found"
# The same task over HTTP: enqueued with redis-cli, read with curl.
id="$(cli ENQUEUE mail '[1,2,3]')"
body="$(curl -sf -H 'Authorization: Bearer interop-token' "http://$http/v1/tasks/$id")"
[[ "$body" == *'"payload":[1,2,3]'* ]] || { echo "HTTP read: $body" >&2; exit 1; }
cli CANCEL "$id" >/dev/null
echo "redis-cli: ok"

echo "== redis-py"
"$venv/bin/python" - "$port" <<'PY'
import sys
import redis

port = int(sys.argv[1])
r = redis.Redis(port=port, password="interop-token", protocol=2)
assert r.ping()
pipe = r.pipeline(transaction=False)
for i in range(1000):
    pipe.execute_command("ENQUEUE", "py", f'{{"n":{i}}}')
ids = pipe.execute()
assert len(ids) == 1000 and ids == sorted(ids), ids[:5]
done = 0
while done < 1000:
    tasks = r.execute_command("CLAIM", "py", "MAX", "300", "WORKER", "py")
    assert tasks, "claim found nothing"
    args = []
    for flat in tasks:
        t = dict(zip(flat[::2], flat[1::2]))
        assert t[b"payload"] == f'{{"n":{ids.index(t[b"id"])}}}'.encode()
        args += [t[b"id"], t[b"token"]]
    results = r.execute_command("ACKMANY", *args)
    assert all(x == b"OK" for x in results), results
    done += len(tasks)
try:
    r.execute_command("ACK", ids[0], "0000000000000000")
    raise AssertionError("ack of a completed task succeeded")
except redis.ResponseError as e:
    assert str(e).startswith("NOT_FOUND"), e

r3 = redis.Redis(port=port, password="interop-token", protocol=3)
first = r3.execute_command("ENQUEUE", "py3", b"\x00\xff", "KEY", "k")
again = r3.execute_command("ENQUEUE", "py3", b"other", "KEY", "k")
assert first[b"duplicate"] is False and again[b"duplicate"] is True, (first, again)
assert again[b"id"] == first[b"id"]
(task,) = r3.execute_command("CLAIM", "py3")
assert task[b"payload"] == b"\x00\xff", task
print("redis-py: ok (1,000 pipelined ENQUEUEs, CLAIM + ACKMANY, RESP3)")
PY

echo "== ioredis"
node scripts/ioredis/interop.mjs "$port" interop-token
