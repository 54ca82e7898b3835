#!/usr/bin/env bash
# Runs the whole side-by-side comparison in one go: Spool (embedded, server
# over HTTP and over RESP, PostgreSQL store) against a hand-written PostgreSQL SKIP LOCKED queue,
# Redis, RabbitMQ (classic and quorum), NATS JetStream and Rust job-queue
# crates on the same PostgreSQL. One system runs at a time.
#
#   bash bench/run.sh [extra spool-compare options, e.g. --systems redis]
#
# Writes docs/benchmarks/compare.{json,md,png}. Takes 20–40 minutes on
# 2 cores: every fill and drain is cut at --max-secs (default 60 here).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== services"
pg_isready -q -h 127.0.0.1 -p 5432 ||
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 ||
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" \
    --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
rabbitmqctl status >/dev/null 2>&1 || rabbitmq-server -detached
(exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null ||
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
for _ in $(seq 1 60); do
  pg_isready -q -h 127.0.0.1 -p 5432 && rabbitmqctl await_startup >/dev/null 2>&1 && break
  sleep 1
done

# The chart's text needs fontconfig and a font; a fresh machine may lack them.
if ! dpkg -s libfontconfig1-dev fonts-dejavu-core >/dev/null 2>&1; then
  apt-get install -y libfontconfig1-dev fonts-dejavu-core
fi

# Redis is switched to appendfsync always for the run; put it back after.
restore_redis() {
  redis-cli -h 127.0.0.1 CONFIG SET appendonly no >/dev/null 2>&1 || true
}
trap restore_redis EXIT

echo "== build"
cargo build --release -p spool-cli
(cd bench/compare && cargo build --release)

echo "== machine"
nproc
uptime
rustc --version
psql --version
redis-server --version
rabbitmqctl version 2>/dev/null || true
nats-server --version 2>/dev/null || true

echo "== run"
bench/compare/target/release/spool-compare \
  --spool-bin target/release/spool \
  --max-secs 60 \
  --out docs/benchmarks/compare.json \
  "$@"
