"""RQ and Celery on Redis, the same workload as bench/sdk's Spool runs.

``python peers.py rq|celery --redis redis://127.0.0.1:6390/0 --tasks 10000 --concurrency 1,16,64``

Enqueue: one producer, 100-byte payloads (RQ: ``enqueue_many`` through one
pipeline per 1000; Celery: one ``apply_async`` each, as Celery publishes).
Drain: a pre-filled queue, timed from the workers' start until the queue is
empty and every task ran. RQ runs one job at a time per process, so
concurrency N is N ``SimpleWorker`` processes (no fork per job); Celery is
one worker with N threads (``-P threads -c N``), acks late.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid

from redis import Redis

HERE = os.path.dirname(os.path.abspath(__file__))
PAYLOAD = {"data": "x" * 88}


def run_rq(redis_url: str, tasks: int, concurrency: int) -> None:
    from rq import Queue

    from peer_tasks import rq_noop

    redis = Redis.from_url(redis_url)
    queue = Queue(f"bench-{uuid.uuid4().hex[:8]}", connection=redis)
    start = time.perf_counter()
    for i in range(0, tasks, 1000):
        n = min(1000, tasks - i)
        queue.enqueue_many(
            [Queue.prepare_data(rq_noop, (PAYLOAD,), result_ttl=0) for _ in range(n)]
        )
    print(f"rq enqueue, enqueue_many of 1000: {tasks / (time.perf_counter() - start):,.0f} tasks/s")
    code = (
        "import sys; from redis import Redis; from rq import Queue, SimpleWorker;"
        "r = Redis.from_url(sys.argv[1]);"
        "SimpleWorker([Queue(sys.argv[2], connection=r)], connection=r).work(burst=True,"
        " logging_level='WARNING')"
    )
    start = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-c", code, redis_url, queue.name], cwd=HERE)
        for _ in range(concurrency)
    ]
    for p in procs:
        p.wait()
    rate = tasks / (time.perf_counter() - start)
    left = len(queue)
    print(f"rq worker, no-op, {concurrency} processes: {rate:,.0f} tasks/s (left {left})")


def run_celery(redis_url: str, tasks: int, concurrency: int) -> None:
    os.environ["CELERY_BROKER"] = redis_url
    from peer_tasks import celery_noop

    redis = Redis.from_url(redis_url)
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    for _ in range(tasks):
        celery_noop.apply_async((PAYLOAD,), queue=queue)
    print(f"celery enqueue, apply_async each: {tasks / (time.perf_counter() - start):,.0f} tasks/s")
    pool = ["-P", "solo"] if concurrency == 1 else ["-P", "threads", "-c", str(concurrency)]
    args = [sys.executable, "-m", "celery", "-A", "peer_tasks", "worker", "-Q", queue, *pool,
            "--without-heartbeat", "--without-gossip", "--without-mingle", "-l", "WARNING"]
    start = time.perf_counter()
    worker = subprocess.Popen(args, cwd=HERE, env={**os.environ, "CELERY_BROKER": redis_url})
    # Empty queue and no unacked message left: every task ran and was acked.
    while redis.llen(queue) > 0 or redis.hlen("unacked") > 0:
        time.sleep(0.01)
    rate = tasks / (time.perf_counter() - start)
    worker.terminate()
    worker.wait()
    print(f"celery worker, no-op, concurrency {concurrency}: {rate:,.0f} tasks/s")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("system", choices=["rq", "celery"])
    p.add_argument("--redis", default="redis://127.0.0.1:6390/0")
    p.add_argument("--tasks", type=int, default=10_000)
    p.add_argument("--concurrency", default="1,16,64")
    a = p.parse_args()
    for c in (int(x) for x in a.concurrency.split(",")):
        (run_rq if a.system == "rq" else run_celery)(a.redis, a.tasks, c)


if __name__ == "__main__":
    main()
