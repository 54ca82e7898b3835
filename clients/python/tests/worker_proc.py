"""A worker process for the process tests: ``worker_proc.py URL QUEUE MODE OUT [options]``.

MODE ``record`` appends each task's id to OUT and returns; ``sleep`` appends
"start <id>" then sleeps for the payload's ``seconds`` and appends "done <id>".
It runs ``Worker.run()``, so SIGINT/SIGTERM shut it down as in production.
"""

from __future__ import annotations

import argparse
import time

from spool_queue import Context, Worker


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("queue")
    p.add_argument("mode", choices=["record", "sleep"])
    p.add_argument("out")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--lease", type=float, default=30)
    p.add_argument("--grace", type=float, default=30)
    a = p.parse_args()
    out = open(a.out, "a", buffering=1)

    def write(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    def record(ctx: Context) -> None:
        write(str(ctx.id))

    def sleep(ctx: Context) -> None:
        write(f"start {ctx.id}")
        assert isinstance(ctx.payload, dict)
        time.sleep(float(ctx.payload["seconds"]))
        write(f"done {ctx.id}")

    worker = Worker(
        a.url, concurrency=a.concurrency, lease=a.lease, poll=0.5, shutdown_grace=a.grace
    )
    worker.handle(a.queue, record if a.mode == "record" else sleep)
    write("ready")
    worker.run()
    write("exited")


if __name__ == "__main__":
    main()
