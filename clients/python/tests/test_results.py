"""Task results against a real server: a handler's return value reaches the tasks
waiting for it; a value that cannot be a result fails the task, never lost unseen."""

from __future__ import annotations

from unittest import mock

import pytest
from conftest import run_until

from spool_queue import AsyncClient, Client, Context, NotFound, TaskSpec, Worker


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
    [task] = client.claim(queue, "test")
    assert task.id == parent.id and task.lease is not None and task.lease.token
    client.ack(task.id, task.lease.token, result={"rows": 3, "tag": "ü"})
    deps = client.get(child.id).deps
    assert deps is not None and deps.parent_results == {parent.id: {"rows": 3, "tag": "ü"}}


def test_a_returned_value_reaches_the_waiting_task_and_none_leaves_no_result(
    client: Client, queue: str
) -> None:
    extract = client.enqueue(queue, {"file": "a.csv"}, kind="extract")
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
    with mock.patch.object(AsyncClient, "ack", autospec=True, side_effect=AsyncClient.ack) as ack:
        run_until(worker, lambda: "results" in seen)
    assert seen["results"] == {extract.id: {"rows": 3, "file": "a.csv"}}
    assert seen["extract"] == {"rows": 3, "file": "a.csv"}
    assert seen["silent"] == "none"
    # Only a value is acked on its own; the rest go out in batches.
    assert [c.args[1] for c in ack.call_args_list] == [extract.id]


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
