"""The client against a real server: round trips, keys, errors, admin calls, schedules."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from conftest import Server

from spool_queue import (
    AsyncClient,
    BadRequest,
    Client,
    LeaseHeld,
    LeaseLost,
    NotFound,
    RateLimit,
    TaskSpec,
)


def claim_one(client: Client, queue: str, **kw: float) -> list:  # type: ignore[type-arg]
    return client.claim(queue, "test", max_tasks=10, **kw)


def test_json_and_binary_payloads_round_trip_exactly(client: Client, queue: str) -> None:
    json_payload = {"n": 2**62, "f": 1.5, "s": "héllo", "l": [None, True, {}], "neg": -(2**63)}
    binary = bytes(range(256))
    a = client.enqueue(queue, json_payload)
    b = client.enqueue(queue, binary)
    c = client.enqueue(queue)
    tasks = {t.id: t for t in claim_one(client, queue)}
    assert tasks[a.id].payload == json_payload
    assert tasks[b.id].payload == binary
    assert tasks[c.id].payload is None
    for t in tasks.values():
        assert t.lease is not None and t.lease.token
        client.ack(t.id, t.lease.token)
    with pytest.raises(NotFound):
        client.get(a.id)


def test_idempotency_key_returns_the_first_task(client: Client, queue: str) -> None:
    first = client.enqueue(queue, {"v": 1}, key="order-7")
    second = client.enqueue(queue, {"v": 2}, key="order-7")
    assert not first.duplicate and second.duplicate and second.id == first.id
    assert client.get((queue, "order-7")).payload == {"v": 1}
    client.cancel((queue, "order-7"))
    with pytest.raises(NotFound):
        client.get(first.id)


def test_batch_enqueue_keeps_request_order(client: Client, queue: str) -> None:
    results = client.enqueue_many(
        queue, [TaskSpec({"i": i}, key=f"k{i % 3}", priority=-i) for i in range(5)]
    )
    assert [r.duplicate for r in results] == [False, False, False, True, True]
    assert results[3].id == results[0].id


def test_delay_priority_and_settings(client: Client, queue: str) -> None:
    late = client.enqueue(queue, "late", delay=timedelta(hours=1))
    assert client.get(late.id).state == "scheduled"
    low = client.enqueue(queue, "low", priority=5)
    high = client.enqueue(queue, "high", priority=-5)
    assert [t.id for t in claim_one(client, queue)] == [high.id, low.id]
    settings = client.put_queue(queue, lease=2, max_attempts=3)
    assert settings.lease_ms == 2000 and settings.max_attempts == 3
    assert client.settings(queue) == settings


def test_errors_follow_the_stable_codes(client: Client, queue: str) -> None:
    with pytest.raises(NotFound) as missing:
        client.get(10**15)
    assert missing.value.code == "not_found" and missing.value.status == 404
    # Its own connection: the server closes a connection after refusing a
    # path, without saying so, and the next request on it could be lost.
    with Client(client.url) as fresh, pytest.raises(BadRequest):
        fresh.enqueue("bad name!", {})
    client.enqueue(queue, {})
    [task] = claim_one(client, queue)
    with pytest.raises(LeaseLost):
        client.ack(task.id, "not-the-token")
    with pytest.raises(LeaseHeld):
        client.update(task.id, priority=3)


def test_fail_retry_and_dead(client: Client, queue: str) -> None:
    client.put_queue(queue, max_attempts=1)
    enq = client.enqueue(queue, {})
    [task] = claim_one(client, queue)
    assert task.lease is not None and task.lease.token is not None
    dead = client.fail(task.id, task.lease.token, "boom")
    assert dead.state == "dead" and dead.errors[-1].message == "boom"
    assert client.tasks(queue, state="dead").tasks[0].id == enq.id
    assert client.retry(enq.id).state == "ready"


def test_pause_resume_and_stats(client: Client, queue: str) -> None:
    client.enqueue(queue, {})
    client.pause(queue)
    assert claim_one(client, queue) == []
    [stats] = [s for s in client.stats() if s.name == queue]
    assert stats.paused and stats.counts.ready == 1
    client.resume(queue)
    assert len(claim_one(client, queue)) == 1


def test_release_restores_the_attempt(client: Client, queue: str) -> None:
    enq = client.enqueue(queue, {})
    [task] = claim_one(client, queue)
    assert task.attempt == 1 and task.lease is not None and task.lease.token is not None
    client.release(task.id, task.lease.token)
    again = client.get(enq.id)
    assert again.state == "ready" and again.attempt == 0


def test_wait_leases_lost_answers_the_leases_no_longer_held(client: Client, queue: str) -> None:
    first, second = (client.enqueue(queue, {"i": i}).id for i in range(2))
    tasks = claim_one(client, queue)
    leases = [(t.id, t.lease.token) for t in tasks]
    assert sorted(i for i, _ in leases) == [first, second]
    assert client.wait_leases_lost(leases) == []
    assert client.wait_leases_lost(leases, wait=0.2) == []
    # A token the server never issued is a lease nobody holds.
    assert client.wait_leases_lost([(first, "not-a-token"), leases[1]]) == [first]
    client.cancel(second)
    assert client.wait_leases_lost(leases, wait=5) == [second]
    with pytest.raises(BadRequest):
        client.wait_leases_lost([])


async def _cancel_during_wait(client: AsyncClient, task_id: int, token: str) -> list[int]:
    waiting = asyncio.create_task(client.wait_leases_lost([(task_id, token)], wait=10))
    await asyncio.sleep(0.2)
    await client.cancel(task_id)
    return await asyncio.wait_for(waiting, 2)


def test_wait_leases_lost_long_polls_until_a_cancel(server: Server, queue: str) -> None:
    async def go() -> None:
        async with AsyncClient(server.url) as client:
            enq = await client.enqueue(queue, {})
            [task] = await client.claim(queue, "test")
            assert task.lease is not None and task.lease.token is not None
            assert await _cancel_during_wait(client, enq.id, task.lease.token) == [enq.id]

    asyncio.run(go())


def test_schedules(client: Client, queue: str) -> None:
    name = f"s-{queue}"
    made = client.put_schedule(name, queue, every=timedelta(seconds=1), payload={"tick": True})
    assert made.every_ms == 1000 and made.queue == queue
    assert name in [s.name for s in client.schedules()]
    # The server fires it; the tick's task lands in the queue within two periods.
    deadline = datetime.now(timezone.utc) + timedelta(seconds=5)
    while not claim_one(client, queue):
        assert datetime.now(timezone.utc) < deadline, "no tick fired"
    client.delete_schedule(name)
    assert name not in [s.name for s in client.schedules()]
    nightly = client.put_schedule(
        name, queue, cron="0 0 2 * * *", tz="Europe/Paris", deadline=timedelta(minutes=10)
    )
    assert (nightly.cron, nightly.tz, nightly.every_ms) == ("0 0 2 * * *", "Europe/Paris", None)
    assert nightly.deadline_ms == 600_000
    # 02:00 in Paris is 00:00 or 01:00 UTC, depending on summer time.
    fire = nightly.next_fire_at
    assert fire is not None and fire > datetime.now(timezone.utc)
    assert (fire.astimezone(timezone.utc).hour, fire.minute, fire.second) in [(0, 0, 0), (1, 0, 0)]
    client.delete_schedule(name)
    with pytest.raises(BadRequest):
        client.put_schedule(name, queue, every=0.01)
    with pytest.raises(ValueError):
        client.put_schedule(name, queue)


def test_async_client(server: Server, queue: str) -> None:
    async def go() -> None:
        async with AsyncClient(server.url) as c:
            enq = await c.enqueue(queue, b"\xff")
            [task] = await c.claim(queue, "async", wait=1)
            assert task.id == enq.id and task.payload == b"\xff"
            assert task.lease is not None and task.lease.token is not None
            await c.ack(task.id, task.lease.token)
            with pytest.raises(NotFound):
                await c.get(enq.id)

    asyncio.run(go())


def test_traceparent_is_kept_and_a_malformed_one_refused(client: Client, queue: str) -> None:
    tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    traced = client.enqueue(queue, {"n": 1}, traceparent=tp)
    plain = client.enqueue(queue, {"n": 2})
    assert client.get(traced.id).traceparent == tp
    assert client.get(plain.id).traceparent is None
    with pytest.raises(BadRequest):
        client.enqueue(queue, traceparent="00-not-a-trace-01")


def test_group_is_kept_and_a_malformed_one_refused(client: Client, queue: str) -> None:
    grouped = client.enqueue(queue, {"n": 1}, group="customer 42 ü")
    batch = client.enqueue_many(queue, [TaskSpec({"n": 2}, group="acme"), TaskSpec({"n": 3})])
    assert client.get(grouped.id).group == "customer 42 ü"
    assert client.get(batch[0].id).group == "acme"
    assert client.get(batch[1].id).group is None
    with pytest.raises(BadRequest):
        client.enqueue(queue, group="")


def test_group_concurrency_is_set_kept_and_removed(client: Client, queue: str) -> None:
    assert client.put_queue(queue, group_concurrency=3).group_concurrency == 3
    assert client.settings(queue).group_concurrency == 3
    assert client.put_queue(queue, max_attempts=4).group_concurrency == 3
    with pytest.raises(BadRequest):
        client.put_queue(queue, group_concurrency=0)
    assert client.put_queue(queue, group_concurrency=None).group_concurrency is None


def test_claim_limits_are_set_read_changed_and_removed(client: Client, queue: str) -> None:
    set_ = client.put_queue(
        queue,
        rate_limit=RateLimit(100, 1, 10),
        max_leased=5,
        group_rate_limit=RateLimit(2, timedelta(milliseconds=500), 1),
    )
    assert set_.rate_limit == RateLimit(100, timedelta(seconds=1), 10)
    assert set_.rate_limit is not None and set_.rate_limit.period_ms == 1000
    assert set_.max_leased == 5
    assert set_.group_rate_limit == RateLimit(2, 0.5, 1)
    assert client.settings(queue) == set_
    # A change that names none of them keeps them all.
    assert client.put_queue(queue, max_attempts=4) == dataclasses.replace(set_, max_attempts=4)

    changed = client.put_queue(queue, rate_limit=RateLimit(50, timedelta(minutes=1), 5))
    assert changed.rate_limit == RateLimit(50, 60, 5)
    assert changed.max_leased == 5 and changed.group_rate_limit == set_.group_rate_limit
    assert client.put_queue(queue, max_leased=7).max_leased == 7
    assert client.settings(queue).rate_limit == RateLimit(50, 60, 5)

    assert client.put_queue(queue, rate_limit=None).rate_limit is None
    kept = client.settings(queue)
    assert kept.max_leased == 7 and kept.group_rate_limit == set_.group_rate_limit
    assert client.put_queue(queue, max_leased=None).max_leased is None
    cleared = client.put_queue(queue, group_rate_limit=None)
    assert (cleared.rate_limit, cleared.max_leased, cleared.group_rate_limit) == (None, None, None)
    assert client.settings(queue) == cleared


@pytest.mark.parametrize(
    "change",
    [
        {"rate_limit": RateLimit(0, 1, 1)},
        {"rate_limit": RateLimit(1, 0, 1)},
        {"rate_limit": RateLimit(1, 1, 0)},
        {"group_rate_limit": RateLimit(0, 1, 1)},
        {"max_leased": 0},
        {"group_concurrency": 0},
        {"lease": 0},
        {"max_attempts": 0},
        {"backoff_base": timedelta(hours=2)},
        {"max_payload": 64 * 1024 * 1024 + 1},
    ],
)
def test_a_bad_setting_is_refused_and_changes_nothing(
    client: Client, queue: str, change: dict[str, Any]
) -> None:
    before = client.put_queue(queue, rate_limit=RateLimit(3, 1, 3), max_leased=2)
    with pytest.raises(BadRequest) as refused:
        client.put_queue(queue, **change)
    assert refused.value.status == 400 and refused.value.code == "bad_request"
    assert client.settings(queue) == before


def test_a_rate_limit_holds_at_claim(client: Client, queue: str) -> None:
    client.put_queue(queue, rate_limit=RateLimit(2, timedelta(minutes=1), 2))
    client.enqueue_many(queue, [TaskSpec({"n": n}) for n in range(5)])
    assert len(client.claim(queue, "test", max_tasks=5)) == 2
    [stats] = [s for s in client.stats() if s.name == queue]
    assert stats.rate_tokens == 0 and stats.counts.ready == 3 and stats.counts.leased == 2
    # The bucket refills at one token per 30 s: nothing more for now.
    assert client.claim(queue, "test", max_tasks=5) == []
    # Removing the limit lets the rest through.
    assert client.put_queue(queue, rate_limit=None).rate_limit is None
    assert len(client.claim(queue, "test", max_tasks=5)) == 3


def test_max_leased_holds_at_claim(client: Client, queue: str) -> None:
    assert client.put_queue(queue, max_leased=1).max_leased == 1
    client.enqueue_many(queue, [TaskSpec({"n": n}) for n in range(3)])
    [first] = claim_one(client, queue)
    # One task leased of one allowed: the next claim gets nothing, not an error.
    assert claim_one(client, queue) == []
    [stats] = [s for s in client.stats() if s.name == queue]
    assert stats.counts.leased == 1 and stats.counts.ready == 2
    # An ack frees the slot.
    assert first.lease is not None and first.lease.token
    client.ack(first.id, first.lease.token)
    assert len(claim_one(client, queue)) == 1
    assert claim_one(client, queue) == []
    # Removing the cap lets the rest through.
    assert client.put_queue(queue, max_leased=None).max_leased is None
    assert len(claim_one(client, queue)) == 1


def test_group_concurrency_holds_at_claim(client: Client, queue: str) -> None:
    client.put_queue(queue, group_concurrency=1)
    client.enqueue_many(
        queue,
        [
            TaskSpec({"n": 1}, group="acme"),
            TaskSpec({"n": 2}, group="acme"),
            TaskSpec({"n": 3}, group="globex"),
            TaskSpec({"n": 4}),
        ],
    )
    # One task per group; tasks without a group are not bound by it.
    claimed = claim_one(client, queue)
    assert {t.group: t.payload for t in claimed} == {
        None: {"n": 4},
        "acme": {"n": 1},
        "globex": {"n": 3},
    }
    assert claim_one(client, queue) == []
    [acme] = [t for t in claimed if t.group == "acme"]
    assert acme.lease is not None and acme.lease.token
    client.ack(acme.id, acme.lease.token)
    assert [t.payload for t in claim_one(client, queue)] == [{"n": 2}]


def test_put_queue_pauses_and_resumes(client: Client, queue: str) -> None:
    client.enqueue(queue, {})
    assert client.put_queue(queue, paused=True).paused
    assert claim_one(client, queue) == []
    # A change that does not name paused keeps the pause.
    assert client.put_queue(queue, max_leased=3).paused
    assert client.settings(queue).paused
    assert not client.put_queue(queue, paused=False).paused
    assert len(claim_one(client, queue)) == 1


def test_settings_of_a_queue_nobody_created_are_not_found(client: Client, queue: str) -> None:
    with pytest.raises(NotFound) as missing:
        client.settings(queue)
    assert missing.value.status == 404 and missing.value.code == "not_found"
    # put_queue creates the queue, with the defaults for what it does not name.
    created = client.put_queue(queue, max_leased=2)
    assert created.max_leased == 2 and created.max_attempts == 20 and not created.paused
    assert client.settings(queue) == created


def test_the_async_client_sets_and_removes_claim_limits(server: Server, queue: str) -> None:
    async def go() -> None:
        async with AsyncClient(server.url) as c:
            with pytest.raises(NotFound):
                await c.settings(queue)
            s = await c.put_queue(queue, max_leased=1, group_rate_limit=RateLimit(1, 2, 1))
            assert s.max_leased == 1 and s.group_rate_limit == RateLimit(1, 2, 1)
            assert await c.settings(queue) == s
            with pytest.raises(BadRequest):
                await c.put_queue(queue, max_leased=0)
            s = await c.put_queue(queue, max_leased=None, group_rate_limit=None)
            assert s.max_leased is None and s.group_rate_limit is None

    asyncio.run(go())


def test_a_dependent_is_pending_until_its_parent_is_acked(client: Client, queue: str) -> None:
    parent = client.enqueue(queue, {"step": 1})
    child = client.enqueue(queue, {"step": 2}, after=[parent.id], if_parent_fails="run")
    waiting = client.get(child.id)
    assert waiting.state == "pending"
    assert waiting.deps is not None
    assert waiting.deps.after == [parent.id] and waiting.deps.waiting_on == [parent.id]
    assert waiting.deps.if_parent_fails == "run"
    assert client.get(parent.id).deps is None
    [stats] = [s for s in client.stats() if s.name == queue]
    assert stats.counts.pending == 1 and stats.counts.ready == 1

    [task] = claim_one(client, queue)
    assert task.id == parent.id and task.lease is not None and task.lease.token
    client.ack(task.id, task.lease.token)
    released = client.get(child.id)
    assert released.state == "ready"
    assert released.deps is not None and released.deps.parents_completed == 1

    batch = client.enqueue_many(queue, [TaskSpec({"n": 1}), TaskSpec({"n": 2}, after_batch=[0])])
    second = client.get(batch[1].id).deps
    assert second is not None and second.after == [batch[0].id]
    with pytest.raises(BadRequest):
        client.enqueue_many(queue, [TaskSpec({}, after_batch=[1]), TaskSpec({})])
    with pytest.raises(BadRequest):
        client.enqueue(queue, if_parent_fails="maybe")
