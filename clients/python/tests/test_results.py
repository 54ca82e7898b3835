"""Task results against a real server: a handler's return value reaches the tasks
waiting for it; a value that cannot be a result fails the task, never lost unseen."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from conftest import keeps_results

from spool_queue import Client, Context, NotFound, TaskSpec, Worker


def run_until(worker: Worker, done: Callable[[], bool], limit: float = 20.0) -> None:
    """Run the worker until ``done()`` holds, then stop it and wait for its shutdown."""

    async def go() -> None:
        running = asyncio.create_task(worker.arun())
        start = time.monotonic()
        while not done():
            assert time.monotonic() - start < limit, "condition not reached in time"
            assert not running.done(), "worker exited early"
            await asyncio.sleep(0.02)
        worker.stop()
        await asyncio.wait_for(running, 30)

    asyncio.run(go())


def dead_with(client: Client, task_id: int) -> str | None:
    """The last error of a task that went dead, else None."""
    try:
        task = client.get(task_id)
    except NotFound:
        return None
    return task.errors[-1].message if task.state == "dead" and task.errors else None


def test_a_client_ack_with_a_result_reaches_the_waiting_task(client: Client, queue: str) -> None:
    parent = client.enqueue(queue, {"step": 1})
    child = client.enqueue(queue, {"step": 2}, after=[parent.id])
    waiting = client.get(child.id).deps
    assert waiting is not None and waiting.parent_results == {}
    if not keeps_results(client):
        return  # the store refuses results: the worker tests below check what then
    [task] = client.claim(queue, "test")
    assert task.id == parent.id and task.lease is not None and task.lease.token
    client.ack(task.id, task.lease.token, result={"rows": 3, "tag": "ü"})
    deps = client.get(child.id).deps
    assert deps is not None and deps.parent_results == {parent.id: {"rows": 3, "tag": "ü"}}


def test_a_returned_value_is_read_by_the_task_waiting_for_it(client: Client, queue: str) -> None:
    keeps = keeps_results(client)
    extract = client.enqueue(queue, {"file": "a.csv"}, kind="extract", max_attempts=1)
    silent = client.enqueue(queue, None, kind="silent")
    load = client.enqueue(queue, None, kind="load", after=[extract.id, silent.id])
    seen: dict[str, object] = {}

    def do_extract(ctx: Context) -> dict[str, object]:
        assert isinstance(ctx.payload, dict)
        return {"rows": 3, "file": ctx.payload["file"]}

    async def do_silent(ctx: Context) -> None:
        return None

    def do_load(ctx: Context) -> None:
        assert ctx.id == load.id
        seen["results"] = ctx.parent_results
        seen["extract"] = ctx.parent_result(extract.id)
        seen["silent"] = ctx.parent_result(silent.id, "none")

    worker = Worker(client, poll=0.2)
    worker.handle(queue, do_extract, kind="extract")
    worker.handle(queue, do_silent, kind="silent")
    worker.handle(queue, do_load, kind="load")
    if keeps:
        run_until(worker, lambda: "results" in seen)
        assert seen["results"] == {extract.id: {"rows": 3, "file": "a.csv"}}
        assert seen["extract"] == {"rows": 3, "file": "a.csv"}
        assert seen["silent"] == "none"
    else:
        # A store that keeps no results refuses the ack: the run fails with the
        # server's reason instead of its result vanishing.
        run_until(worker, lambda: dead_with(client, extract.id) is not None)
        message = dead_with(client, extract.id) or ""
        assert "the server refused the handler's return value" in message, message


def test_a_value_that_cannot_be_a_result_fails_the_task(client: Client, queue: str) -> None:
    big = client.enqueue(queue, None, kind="big", max_attempts=1)
    odd = client.enqueue(queue, None, kind="odd", max_attempts=1)
    child = client.enqueue_many(queue, [TaskSpec(None, kind="child", after=[big.id])])[0]
    ran: list[int] = []

    worker = Worker(client, poll=0.2)
    worker.handle(queue, lambda ctx: "x" * 5000, kind="big")
    worker.handle(queue, lambda ctx: object(), kind="odd")
    worker.handle(queue, lambda ctx: ran.append(ctx.id), kind="child")
    run_until(
        worker,
        lambda: dead_with(client, big.id) is not None and dead_with(client, odd.id) is not None,
    )
    too_big = dead_with(client, big.id) or ""
    assert "5002 bytes" in too_big and "limit of 4096 bytes" in too_big, too_big
    not_json = dead_with(client, odd.id) or ""
    assert "must be JSON" in not_json and "object" in not_json, not_json
    # The parent died, so its dependent was cancelled with it (the default).
    assert ran == []
    with pytest.raises(NotFound):
        client.get(child.id)
