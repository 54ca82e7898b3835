"""Throughput of the Python client against a running server.

``python bench/bench.py --url http://127.0.0.1:7700 --tasks 20000``

Enqueue: tasks of 100-byte payloads in batches of ``--batch`` (and, for
scale, single enqueues). Worker: a queue pre-filled with ``--tasks`` tasks
drained by one Worker process with a no-op handler at each ``--concurrency``;
the time runs from the worker's start until it has shut down, every task
acked. The shutdown waits for the claim in flight, which long-polls an empty
queue for ``--poll`` seconds: that short default keeps the wait out of the
figure. Prints one line per figure.
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
import uuid

from spool_queue import Client, Context, TaskSpec, Worker

PAYLOAD = {"data": "x" * 88}  # 100 bytes of JSON


def enqueue_batched(client: Client, queue: str, tasks: int, batch: int) -> float:
    start = time.perf_counter()
    for i in range(0, tasks, batch):
        client.enqueue_many(queue, [TaskSpec(PAYLOAD)] * min(batch, tasks - i))
    return tasks / (time.perf_counter() - start)


def enqueue_single(client: Client, queue: str, tasks: int) -> float:
    start = time.perf_counter()
    for _ in range(tasks):
        client.enqueue(queue, PAYLOAD)
    return tasks / (time.perf_counter() - start)


def drain(url: str, queue: str, tasks: int, concurrency: int, sync: bool, poll: float) -> float:
    done = 0
    lock = threading.Lock()
    worker = Worker(url, concurrency=concurrency, poll=poll)

    def count() -> None:
        nonlocal done
        with lock:
            done += 1
            if done == tasks:
                worker.stop()

    async def noop_async(ctx: Context) -> None:
        count()

    def noop_sync(ctx: Context) -> None:
        count()

    worker.handle(queue, noop_sync if sync else noop_async)
    start = time.perf_counter()
    asyncio.run(worker.arun())
    return tasks / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="http://127.0.0.1:7700")
    p.add_argument("--tasks", type=int, default=20_000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--concurrency", default="1,16,64")
    p.add_argument("--sync", action="store_true", help="no-op sync handlers (threads)")
    p.add_argument("--poll", type=float, default=0.05, help="the worker's long poll, seconds")
    a = p.parse_args()
    run = uuid.uuid4().hex[:8]
    with Client(a.url) as client:
        rate = enqueue_single(client, f"bench-py-{run}-single", min(a.tasks, 2000))
        print(f"python enqueue, single, 1 client: {rate:,.0f} tasks/s")
        for c in (int(x) for x in a.concurrency.split(",")):
            queue = f"bench-py-{run}-c{c}"
            rate = enqueue_batched(client, queue, a.tasks, a.batch)
            print(f"python enqueue, batches of {a.batch}: {rate:,.0f} tasks/s")
            rate = drain(a.url, queue, a.tasks, c, a.sync, a.poll)
            kind = "sync" if a.sync else "async"
            print(f"python worker, no-op {kind} handler, concurrency {c}: {rate:,.0f} tasks/s")


if __name__ == "__main__":
    main()
