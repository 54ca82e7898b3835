"""An example app: a producer and a worker for sending emails, with a daily digest.

Start a server (``spool serve``), then in one shell ``python examples/emails.py worker``
and in another ``python examples/emails.py send 20``. Set ``SPOOL_URL`` (and
``SPOOL_TOKEN``) to use another server.
"""

from __future__ import annotations

import logging
import os
import random
import sys
import time
from datetime import timedelta

from spool_queue import Client, Context, Discard, Retry, Worker

URL = os.environ.get("SPOOL_URL", "http://127.0.0.1:7700")
TOKEN = os.environ.get("SPOOL_TOKEN")


def send_email(ctx: Context) -> None:
    """Handlers must be idempotent: a task can run again after a crash or a lost ack."""
    assert isinstance(ctx.payload, dict)
    to = ctx.payload.get("to")
    if not isinstance(to, str) or "@" not in to:
        raise Discard(f"no valid address in {ctx.payload!r}")  # dead at once, no retries
    if random.random() < 0.2:
        # A flaky provider: the server retries with its backoff.
        raise ConnectionError("SMTP server busy")
    if random.random() < 0.1:
        raise Retry("rate limited by the provider", delay=timedelta(seconds=5))
    time.sleep(0.05)  # the actual sending; keep well inside ctx.remaining()
    print(f"sent email {ctx.id} to {to} (attempt {ctx.attempt})")


async def digest(ctx: Context) -> None:
    print(f"daily digest run {ctx.id}")


def main() -> None:
    logging.basicConfig(level=logging.INFO)
    with Client(URL, token=TOKEN) as client:
        if sys.argv[1:2] == ["send"]:
            count = int(sys.argv[2]) if len(sys.argv) > 2 else 10
            for i in range(count):
                # The key makes a retried request (after a timeout, say) safe.
                client.enqueue("emails", {"to": f"user{i}@example.com"}, key=f"welcome-{i}")
            client.enqueue("emails", {"to": "nobody"})
            print(f"enqueued {count + 1} emails")
        elif sys.argv[1:2] == ["worker"]:
            client.put_schedule("digest", "digests", cron="0 0 7 * * *", deadline=600)
            worker = Worker(client, concurrency=8, shutdown_grace=10)
            worker.handle("emails", send_email, timeout=timedelta(seconds=30))
            worker.handle("digests", digest)
            worker.run()  # Ctrl-C: running emails finish, the rest go back to the queue
        else:
            sys.exit("usage: emails.py send [N] | worker")


if __name__ == "__main__":
    main()
