"""No-op task functions for the RQ and Celery runs of bench/sdk (imported by their workers)."""

from __future__ import annotations

import os

from celery import Celery

app = Celery("peer_tasks", broker=os.environ.get("CELERY_BROKER", "redis://127.0.0.1:6390/0"))
app.conf.task_acks_late = True  # ack after the run, as Spool's workers do
app.conf.worker_prefetch_multiplier = 4
app.conf.broker_connection_retry_on_startup = True


def rq_noop(payload: object) -> None:
    return None


@app.task(ignore_result=True)
def celery_noop(payload: object) -> None:
    return None
