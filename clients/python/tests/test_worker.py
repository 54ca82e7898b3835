"""The worker runtime in this process against a real server: outcomes, leases, deadlines."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta

import pytest
from conftest import run_until

from spool_queue import (
    Client,
    Context,
    Discard,
    NotFound,
    Retry,
    Snooze,
    Task,
    TaskSpec,
    Worker,
)


def gone(client: Client, task_id: int) -> bool:
    try:
        client.get(task_id)
    except NotFound:
        return True
    return False


def test_a_handler_that_fails_twice_then_succeeds_runs_three_times(
    client: Client, queue: str
) -> None:
    client.put_queue(queue, backoff_base=0.01, backoff_max=0.05)
    enq = client.enqueue(queue, {"n": 1})
    attempts: list[int] = []

    def flaky(ctx: Context) -> None:
        attempts.append(ctx.attempt)
        assert ctx.payload == {"n": 1} and ctx.kind == queue and ctx.id == enq.id
        if ctx.attempt < 3:
            raise RuntimeError(f"failure {ctx.attempt}")

    worker = Worker(client, concurrency=2, poll=0.2)
    worker.handle(queue, flaky)
    run_until(worker, lambda: gone(client, enq.id))
    assert attempts == [1, 2, 3]


def test_explicit_outcomes(client: Client, queue: str) -> None:
    retried = client.enqueue(queue, "retry", kind="retry")
    discarded = client.enqueue(queue, "discard", kind="discard")
    snoozed = client.enqueue(queue, "snooze", kind="snooze")
    seen: dict[str, list[int]] = {"retry": [], "snooze": []}

    async def retry(ctx: Context) -> None:
        seen["retry"].append(ctx.attempt)
        if ctx.attempt == 1:
            raise Retry("later", delay=0.05)

    def snooze(ctx: Context) -> Snooze | None:
        seen["snooze"].append(ctx.attempt)
        return Snooze(delay=0.05) if len(seen["snooze"]) == 1 else None

    worker = Worker(client, poll=0.2)
    worker.handle(queue, retry, kind="retry")
    worker.handle(queue, snooze, kind="snooze")

    @worker.handle(queue, kind="discard")
    def discard(ctx: Context) -> None:
        raise Discard("not worth it")

    def finished() -> bool:
        return (
            gone(client, retried.id)
            and gone(client, snoozed.id)
            and client.get(discarded.id).state == "dead"
        )

    run_until(worker, finished)
    assert seen["retry"] == [1, 2]
    # A snooze gives the attempt back: the second run is attempt 1 again.
    assert seen["snooze"] == [1, 1]
    dead = client.get(discarded.id)
    assert dead.attempt == 1 and dead.errors[-1].message == "not worth it"


def test_an_exception_is_recorded_with_its_message(client: Client, queue: str) -> None:
    client.put_queue(queue, max_attempts=1)
    enq = client.enqueue(queue, {})

    def broken(ctx: Context) -> None:
        raise ValueError("the reason")

    worker = Worker(client, poll=0.2)
    worker.handle(queue, broken)
    run_until(worker, lambda: client.get(enq.id).state == "dead")
    assert client.get(enq.id).errors[-1].message.startswith("ValueError: the reason")


def test_a_slow_handler_keeps_its_lease_by_extension(client: Client, queue: str) -> None:
    enq = client.enqueue(queue, {})
    runs: list[int] = []
    rival_claims: list[Task] = []

    async def slow(ctx: Context) -> None:
        runs.append(ctx.attempt)
        # Two and a half leases long: without extension the lease would lapse
        # and a rival's claim would take the task.
        for _ in range(5):
            await asyncio.sleep(1.0)
            rival_claims.extend(client.claim(queue, "rival", max_tasks=1))

    worker = Worker(client, lease=2.0, poll=0.2)
    worker.handle(queue, slow)
    run_until(worker, lambda: gone(client, enq.id))
    assert runs == [1] and rival_claims == []


def test_a_deadline_cuts_an_async_handler(client: Client, queue: str) -> None:
    client.put_queue(queue, max_attempts=1)
    enq = client.enqueue(queue, {})
    cancelled = threading.Event()

    async def endless(ctx: Context) -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    worker = Worker(client, poll=0.2)
    worker.handle(queue, endless, timeout=timedelta(milliseconds=300))
    run_until(worker, lambda: client.get(enq.id).state == "dead", limit=10)
    assert cancelled.is_set()
    assert client.get(enq.id).errors[-1].message == "deadline exceeded"


def test_a_deadline_signals_a_sync_handler(client: Client, queue: str) -> None:
    client.put_queue(queue, max_attempts=1)
    enq = client.enqueue(queue, {})
    saw_cancel = threading.Event()
    remaining: list[float] = []

    def polite(ctx: Context) -> None:
        # Not asserted here: on loaded cores the thread may start past the
        # deadline, and an assertion failing in it would hide the cancel.
        remaining.append(ctx.remaining())
        if ctx.cancelled.wait(10):
            saw_cancel.set()

    worker = Worker(client, poll=0.2)
    worker.handle(queue, polite, timeout=0.3)
    run_until(worker, lambda: saw_cancel.is_set() and client.get(enq.id).state == "dead")
    assert len(remaining) == 1 and remaining[0] <= 0.3
    assert client.get(enq.id).errors[-1].message == "deadline exceeded"


def test_a_task_with_its_own_lease_is_cut_at_it(client: Client, queue: str) -> None:
    client.put_queue(queue, max_attempts=1)
    enq = client.enqueue(queue, {}, lease=1.0)

    async def endless(ctx: Context) -> None:
        await asyncio.sleep(60)

    worker = Worker(client, poll=0.2, lease=30)
    worker.handle(queue, endless)
    started = time.monotonic()
    run_until(worker, lambda: client.get(enq.id).state == "dead", limit=10)
    assert time.monotonic() - started < 5
    assert client.get(enq.id).errors[-1].message == "deadline exceeded"


def test_concurrency_is_limited(client: Client, queue: str) -> None:
    ids = [e.id for e in client.enqueue_many(queue, [_spec(i) for i in range(12)])]
    active = 0
    peak = 0
    lock = threading.Lock()

    def busy(ctx: Context) -> None:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.1)
        with lock:
            active -= 1

    worker = Worker(client, concurrency=3, poll=0.2)
    worker.handle(queue, busy)
    run_until(worker, lambda: all(gone(client, i) for i in ids))
    assert peak == 3


def test_sync_handlers_run_on_a_pool_of_reused_threads(client: Client, queue: str) -> None:
    ids = [e.id for e in client.enqueue_many(queue, [_spec(i) for i in range(40)])]
    # Thread objects, not idents: the system reuses the ident of a finished thread.
    threads: set[threading.Thread] = set()
    loop_thread = threading.current_thread()

    def where(ctx: Context) -> None:
        threads.add(threading.current_thread())
        time.sleep(0.01)

    worker = Worker(client, concurrency=2, poll=0.2)
    worker.handle(queue, where)
    run_until(worker, lambda: all(gone(client, i) for i in ids))
    # Per-thread resources (a DB connection in a thread-local) live as long as the worker.
    assert 1 <= len(threads) <= 2 and loop_thread not in threads


def test_stop_releases_a_running_task_after_the_grace_period(client: Client, queue: str) -> None:
    enq = client.enqueue(queue, {})
    started = threading.Event()

    async def stuck(ctx: Context) -> None:
        started.set()
        await asyncio.sleep(60)

    worker = Worker(client, poll=0.2, shutdown_grace=0.3)
    worker.handle(queue, stuck)
    run_until(worker, started.is_set)
    task = client.get(enq.id)
    assert task.state == "ready" and task.attempt == 0


def test_tasks_a_claim_brings_in_after_a_stop_are_released_unrun(
    client: Client, queue: str
) -> None:
    ran: list[int] = []

    async def record(ctx: Context) -> None:
        ran.append(ctx.id)

    worker = Worker(client, poll=5)
    worker.handle(queue, record)

    async def go() -> int:
        running = asyncio.create_task(worker.arun())
        await asyncio.sleep(1.0)  # its first claim now long-polls the empty queue
        worker.stop()
        # Answers that claim after the stop (the blocking call holds the loop,
        # so the stop is handled first).
        task_id = client.enqueue(queue, {}).id
        await asyncio.wait_for(running, 30)
        return task_id

    task_id = asyncio.run(go())
    assert ran == []
    task = client.get(task_id)
    assert task.state == "ready" and task.attempt == 0


def _spec(i: int) -> TaskSpec:
    return TaskSpec({"i": i})


@pytest.mark.parametrize("concurrency", [1, 8])
def test_every_task_runs(client: Client, queue: str, concurrency: int) -> None:
    ids = [e.id for e in client.enqueue_many(queue, [_spec(i) for i in range(200)])]
    seen: list[int] = []

    async def record(ctx: Context) -> None:
        seen.append(ctx.id)

    worker = Worker(client, concurrency=concurrency, poll=0.2)
    worker.handle(queue, record)
    run_until(worker, lambda: len(seen) >= 200)
    assert sorted(seen) == sorted(ids)
    assert client.tasks(queue).tasks == []


def _cancel_when(
    client: Client, started: threading.Event, ref: int | tuple[str, str]
) -> tuple[threading.Thread, list[float]]:
    """Cancel ``ref`` from another thread once ``started`` is set and the watch polls."""
    sent: list[float] = []

    def go() -> None:
        assert started.wait(20)
        time.sleep(0.3)  # the worker's lease watch now long-polls over the run
        sent.append(time.monotonic())
        client.cancel(ref)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, sent


def test_cancelling_a_running_task_signals_its_sync_handler(
    client: Client, queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    enq = client.enqueue(queue, {})
    after = client.enqueue(queue, {"after": True}, delay=1.0)
    started = threading.Event()
    seen: list[float] = []
    lost: list[bool] = []
    runs: list[int] = []

    def polite(ctx: Context) -> str | None:
        runs.append(ctx.id)
        if ctx.id != enq.id:
            return None
        started.set()
        if ctx.cancelled.wait(10):
            seen.append(time.monotonic())
            lost.append(ctx.lost)
        return "finished anyway"  # dropped: the task is gone

    caplog.set_level("DEBUG", logger="spool_queue.worker")
    thread, sent = _cancel_when(client, started, enq.id)
    worker = Worker(client, poll=0.2)
    worker.handle(queue, polite)
    run_until(worker, lambda: bool(seen) and gone(client, after.id))
    thread.join(5)
    latency = seen[0] - sent[0]
    print(f"sync handler saw the cancel after {latency * 1000:.1f} ms")
    assert latency < 0.1 and lost == [True]
    assert runs == [enq.id, after.id] and gone(client, enq.id)
    # No ack, fail or release went out for the cancelled run: each would be refused.
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    assert "outcome of a lost run dropped: 'finished anyway'" in caplog.text


def test_cancelling_a_running_task_by_key_cancels_its_async_handler(
    client: Client, queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    enq = client.enqueue(queue, {}, key="k1")
    started = threading.Event()
    seen: list[float] = []
    flags: list[tuple[bool, bool]] = []

    async def endless(ctx: Context) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.append(time.monotonic())
            flags.append((ctx.lost, ctx.cancelled.is_set()))
            raise

    thread, sent = _cancel_when(client, started, (queue, "k1"))
    worker = Worker(client, poll=0.2)
    worker.handle(queue, endless)
    run_until(worker, lambda: bool(seen))
    thread.join(5)
    latency = seen[0] - sent[0]
    print(f"async handler saw the cancel after {latency * 1000:.1f} ms")
    assert latency < 0.1 and flags == [(True, True)]
    assert gone(client, enq.id)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
