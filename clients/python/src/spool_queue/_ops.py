"""Every API call once, as data: the request to send and how to read the answer.

Client and AsyncClient only differ in how they send a request, so each
operation is written here once, with the signature and docstring both clients
expose (a "sans-I/O" layer); ``client`` turns each into a method of each. An
answer of 400 or more becomes the exception of its error code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from .errors import error_for
from .models import (
    JSON,
    Enqueued,
    QueueSettings,
    QueueStats,
    RateLimit,
    Schedule,
    Task,
    TaskPage,
    format_time,
    parse_time,
    payload_fields,
    to_ms,
)

T = TypeVar("T")

Duration = timedelta | float
"""A duration: a ``timedelta``, or seconds."""
TaskRef = int | tuple[str, str]
"""A task id, or ``(queue, key)`` for a live task enqueued with that key."""


@dataclass(frozen=True)
class Op(Generic[T]):
    method: str
    path: str
    parse: Callable[[Any], T]
    """Reads the decoded JSON body (None for an empty answer)."""
    json: Any = None
    params: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    """Overrides the client's read timeout (a long poll needs more)."""

    def finish(self, response: httpx.Response) -> T:
        body: Any = None
        if response.content:
            try:
                body = response.json()
            except ValueError:
                body = None
        if response.status_code >= 400:
            detail = body.get("error") if isinstance(body, dict) else None
            if isinstance(detail, dict):
                code = str(detail.get("code", "unknown"))
                message = str(detail.get("message", response.text))
            else:
                code, message = "unknown", response.text or response.reason_phrase
            raise error_for(code, message, response.status_code)
        return self.parse(body)


def _seg(s: str) -> str:
    return quote(s, safe="")


def _ms(d: Duration | None) -> int | None:
    return None if d is None else to_ms(d)


def _time(at: datetime | None) -> str | None:
    return None if at is None else format_time(at)


def _compact(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


def _none(_: Any) -> None:
    return None


def _task(body: Any) -> Task:
    return Task.from_json(body)


def _tasks(body: Any) -> list[Task]:
    return [Task.from_json(t) for t in body["tasks"]]


@dataclass(frozen=True)
class TaskSpec:
    """One task of a batch for ``enqueue_many``; the fields are ``enqueue``'s.

    ``after_batch`` names tasks of the same batch this one waits for, by their
    positions in it (each before this one's): a workflow created whole or not at all.
    """

    payload: JSON | bytes = None
    kind: str | None = None
    key: str | None = None
    delay: Duration | None = None
    run_at: datetime | None = None
    priority: int | None = None
    max_attempts: int | None = None
    lease: Duration | None = None
    traceparent: str | None = None
    group: str | None = None
    after: Sequence[int] | None = None
    after_batch: Sequence[int] | None = None
    if_parent_fails: str | None = None

    def to_json(self) -> dict[str, Any]:
        return _compact(
            {
                **payload_fields(self.payload),
                "kind": self.kind,
                "key": self.key,
                "delay_ms": _ms(self.delay),
                "run_at": _time(self.run_at),
                "priority": self.priority,
                "max_attempts": self.max_attempts,
                "lease_ms": _ms(self.lease),
                "traceparent": self.traceparent,
                "group": self.group,
                "after": list(self.after) if self.after else None,
                "after_batch": list(self.after_batch) if self.after_batch else None,
                "if_parent_fails": self.if_parent_fails,
            }
        )


def _enqueued(body: Any) -> list[Enqueued]:
    return [Enqueued(int(t["id"]), bool(t["duplicate"])) for t in body["tasks"]]


def _first_enqueued(body: Any) -> Enqueued:
    return _enqueued(body)[0]


def enqueue(
    queue: str,
    payload: JSON | bytes = None,
    *,
    key: str | None = None,
    delay: Duration | None = None,
    run_at: datetime | None = None,
    priority: int | None = None,
    max_attempts: int | None = None,
    kind: str | None = None,
    lease: Duration | None = None,
    traceparent: str | None = None,
    group: str | None = None,
    after: Sequence[int] | None = None,
    if_parent_fails: str | None = None,
) -> Op[Enqueued]:
    """Create one task; with ``key``, a live (or recently done) task with it wins.

    ``bytes`` payloads travel as bytes, anything else as JSON. ``lease`` is the
    task's own lease (its time-to-run): a claim leases it this long.
    ``traceparent`` is the producer's W3C trace context, which the task's runs
    join. ``group`` puts the task in a group of its queue (a customer, an API
    host; 1-128 bytes): claims take from the groups in turn, and the queue's
    ``group_concurrency`` caps each group's tasks leased at once. ``after``
    names tasks (by id, in any queue) this one waits for: it is ``pending``
    until each has ended; ``if_parent_fails`` is ``"cancel"`` (the default:
    a parent that dies or is cancelled cancels it too) or ``"run"``.
    """
    spec = TaskSpec(
        payload,
        kind,
        key,
        delay,
        run_at,
        priority,
        max_attempts,
        lease,
        traceparent,
        group,
        after,
        None,
        if_parent_fails,
    )
    return Op("POST", f"/v1/queues/{_seg(queue)}/tasks", _first_enqueued, spec.to_json())


def enqueue_many(queue: str, tasks: Sequence[TaskSpec]) -> Op[list[Enqueued]]:
    """Create a batch atomically (at most 10,000); results in request order."""
    body = {"tasks": [t.to_json() for t in tasks]}
    return Op("POST", f"/v1/queues/{_seg(queue)}/tasks", _enqueued, body)


def claim(
    queue: str,
    worker: str,
    *,
    max_tasks: int = 1,
    lease: Duration | None = None,
    wait: Duration = 0,
) -> Op[list[Task]]:
    """Lease up to ``max_tasks`` ready tasks, waiting up to ``wait`` for one."""
    wait_ms = to_ms(wait)
    body = _compact(
        {"worker": worker, "max": max_tasks, "wait_ms": wait_ms, "lease_ms": _ms(lease)}
    )
    # The server may hold a claim for wait_ms; the read timeout must outlast it.
    return Op("POST", f"/v1/queues/{_seg(queue)}/claim", _tasks, body, timeout=wait_ms / 1000 + 30)


MAX_RESULT = 4096
"""The most bytes a task's result may take, as compact JSON text (UTF-8)."""


def result_text(value: JSON) -> str:
    """``value`` as the compact JSON text the server measures a result by.

    Raises ``ValueError`` for a value that is not JSON (``TypeError`` from
    ``json`` included, NaN and infinities too) or that takes more than
    ``MAX_RESULT`` bytes.
    """
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"a result must be JSON: {e}") from e
    size = len(text.encode("utf-8"))
    if size > MAX_RESULT:
        raise ValueError(
            f"a result of {size} bytes of JSON exceeds the limit of {MAX_RESULT} bytes;"
            " pass larger outputs by reference"
        )
    return text


def ack(
    task_id: int,
    token: str,
    *,
    reschedule_at: datetime | None = None,
    result: JSON = ...,
) -> Op[None]:
    """Complete a task (it is deleted), or re-arm it at ``reschedule_at``.

    ``result`` (any JSON of at most 4,096 bytes written compactly) is handed to
    every task still waiting for this one, which reads it in its
    ``deps.parent_results``; not with ``reschedule_at``. ``None`` leaves no
    result: the API does not tell JSON null from none. A result the server
    refuses (not JSON, too large) raises ``BadRequest`` and the task stays leased.
    """
    if result is not ... and reschedule_at is not None:
        raise ValueError("give result= or reschedule_at=, not both")
    body = _compact(
        {
            "token": token,
            "reschedule_at": _time(reschedule_at),
            "result": None if result is ... else result,
        }
    )
    return Op("POST", f"/v1/tasks/{task_id}/ack", _none, body)


@dataclass(frozen=True)
class AckResult:
    """One item of a batch ack: status 204 done, 404 gone, 409 lease lost."""

    id: int
    status: int
    code: str | None


def _ack_results(body: Any) -> list[AckResult]:
    return [
        AckResult(int(r["id"]), int(r["status"]), (r.get("error") or {}).get("code"))
        for r in body["results"]
    ]


def ack_many(acks: Sequence[tuple[int, str]]) -> Op[list[AckResult]]:
    """Complete many tasks, given as ``(id, token)``; each item succeeds or fails alone."""
    body = {"acks": [{"id": i, "token": t} for i, t in acks]}
    return Op("POST", "/v1/ack", _ack_results, body)


def fail(
    task_id: int,
    token: str,
    message: str,
    *,
    retry_at: datetime | None = None,
    discard: bool = False,
) -> Op[Task]:
    """Record a failure: retried after the backoff (or at ``retry_at``), or dead."""
    body = _compact(
        {
            "token": token,
            "message": message,
            "retry_at": _time(retry_at),
            "discard": discard or None,
        }
    )
    return Op("POST", f"/v1/tasks/{task_id}/fail", _task, body)


def release(task_id: int, token: str) -> Op[None]:
    """Give a task back unrun: ready again, its attempt restored."""
    return Op("POST", f"/v1/tasks/{task_id}/release", _none, {"token": token})


def extend(task_id: int, token: str, lease: Duration) -> Op[Task]:
    """The lease now expires ``lease`` from now."""
    body = {"token": token, "lease_ms": to_ms(lease)}
    return Op("POST", f"/v1/tasks/{task_id}/extend", _task, body)


def snooze(task_id: int, token: str, run_at: datetime) -> Op[Task]:
    """Give a task back to run at ``run_at``, the attempt not counted."""
    body = {"token": token, "run_at": format_time(run_at)}
    return Op("POST", f"/v1/tasks/{task_id}/snooze", _task, body)


def _lost(body: Any) -> list[int]:
    return [int(i) for i in body["lost"]]


def wait_leases_lost(leases: Sequence[tuple[int, str]], *, wait: Duration = 0) -> Op[list[int]]:
    """Which of these leases, given as ``(id, token)`` (1 to 10,000), are no longer held.

    A lease is lost when its task is gone (cancelled, completed), its lease
    expired, or another claim holds it now. Answers their ids in request
    order at once when there are some; otherwise waits up to ``wait`` (at
    most 30 s) for one to be lost, and answers an empty list if none was.
    """
    wait_ms = to_ms(wait)
    body = {"leases": [{"id": i, "token": t} for i, t in leases], "wait_ms": wait_ms}
    # A long poll like a claim: the read timeout must outlast wait_ms.
    return Op("POST", "/v1/leases/wait", _lost, body, timeout=wait_ms / 1000 + 30)


def _task_path(task: TaskRef) -> str:
    if isinstance(task, tuple):
        queue, key = task
        return f"/v1/queues/{_seg(queue)}/keys/{_seg(key)}"
    return f"/v1/tasks/{task}"


def get(task: TaskRef) -> Op[Task]:
    return Op("GET", _task_path(task), _task)


def cancel(task: TaskRef) -> Op[None]:
    """Delete a task in any state; its lease holder's ack is then refused."""
    return Op("DELETE", _task_path(task), _none)


def update(
    task: TaskRef,
    *,
    payload: JSON | bytes = ...,
    run_at: datetime | None = None,
    priority: int | None = None,
) -> Op[Task]:
    """Change a task that is not leased (else ``LeaseHeld``); absent fields stay."""
    body = {} if payload is ... else payload_fields(payload)
    body.update(_compact({"run_at": _time(run_at), "priority": priority}))
    return Op("PATCH", _task_path(task), _task, body)


def retry(task_id: int) -> Op[Task]:
    """A dead task back to ready, with its attempts reset."""
    return Op("POST", f"/v1/tasks/{task_id}/retry", _task, {})


def retry_dead(queue: str) -> Op[int]:
    """Every dead task of a queue back to ready; answers how many."""
    return Op("POST", f"/v1/queues/{_seg(queue)}/retry", lambda b: int(b["retried"]), {})


def tasks(
    queue: str,
    *,
    state: str | None = None,
    order: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Op[TaskPage]:
    """A page of a queue's tasks (``order="attempts_desc"`` for the most tried first)."""
    params = {
        k: str(v)
        for k, v in (("state", state), ("order", order), ("limit", limit), ("cursor", cursor))
        if v is not None
    }

    def parse(body: Any) -> TaskPage:
        return TaskPage([Task.from_json(t) for t in body["tasks"]], body.get("next_cursor"))

    return Op("GET", f"/v1/queues/{_seg(queue)}/tasks", parse, params=params)


def stats() -> Op[list[QueueStats]]:
    """Every queue with its counts per state and per kind."""
    return Op("GET", "/v1/queues", lambda b: [QueueStats.from_json(q) for q in b["queues"]])


def pause(queue: str) -> Op[None]:
    return Op("POST", f"/v1/queues/{_seg(queue)}/pause", _none, {})


def resume(queue: str) -> Op[None]:
    return Op("POST", f"/v1/queues/{_seg(queue)}/resume", _none, {})


def _settings(body: Any) -> QueueSettings:
    return QueueSettings.from_json(body)


def settings(queue: str) -> Op[QueueSettings]:
    """A queue's settings, its claim limits among them; ``NotFound`` for a queue nobody created."""
    return Op("GET", f"/v1/queues/{_seg(queue)}", _settings)


class _Keep(Enum):
    """The default of a setting that ``None`` removes: leave it as it is."""

    KEEP = "keep"


def _limit(value: RateLimit | None) -> dict[str, int] | None:
    return None if value is None else value.to_json()


def put_queue(
    queue: str,
    *,
    lease: Duration | None = None,
    max_attempts: int | None = None,
    backoff_base: Duration | None = None,
    backoff_max: Duration | None = None,
    dedup_window: Duration | None = None,
    max_payload: int | None = None,
    paused: bool | None = None,
    rate_limit: RateLimit | _Keep | None = _Keep.KEEP,
    max_leased: int | _Keep | None = _Keep.KEEP,
    group_concurrency: int | _Keep | None = _Keep.KEEP,
    group_rate_limit: RateLimit | _Keep | None = _Keep.KEEP,
) -> Op[QueueSettings]:
    """Create a queue or change its settings; absent ones keep their values.

    Each change applies live: the next claim obeys it, and a setting it does
    not name keeps its value.
    ``paused`` pauses (``True``) or resumes (``False``) the queue, as ``pause``
    and ``resume`` do. A value the server refuses (a limit of 0, a
    ``backoff_base`` over the ``backoff_max``) raises ``BadRequest`` and
    changes nothing. Answers the settings now in force.

    The claim limits bind every worker on the server's store; ``None`` removes
    one. ``rate_limit`` (a ``RateLimit``) caps the tasks handed out per period;
    ``max_leased`` the queue's tasks leased at once; ``group_concurrency`` the
    tasks of any one group leased at once; ``group_rate_limit`` gives each
    group a rate limit (a bucket) of its own.
    """
    body = _compact(
        {
            "lease_ms": _ms(lease),
            "max_attempts": max_attempts,
            "backoff_base_ms": _ms(backoff_base),
            "backoff_max_ms": _ms(backoff_max),
            "dedup_window_ms": _ms(dedup_window),
            "max_payload": max_payload,
            "paused": paused,
        }
    )
    # Absent keeps a limit, None (JSON null) removes it: not _compact's rule.
    if rate_limit is not _Keep.KEEP:
        body["rate_limit"] = _limit(rate_limit)
    if max_leased is not _Keep.KEEP:
        body["max_leased"] = max_leased
    if group_concurrency is not _Keep.KEEP:
        body["group_concurrency"] = group_concurrency
    if group_rate_limit is not _Keep.KEEP:
        body["group_rate_limit"] = _limit(group_rate_limit)
    return Op("PUT", f"/v1/queues/{_seg(queue)}", _settings, body)


def put_schedule(
    name: str,
    queue: str,
    *,
    every: Duration | None = None,
    cron: str | None = None,
    tz: str | None = None,
    payload: JSON | bytes = None,
    kind: str | None = None,
    deadline: Duration | None = None,
) -> Op[Schedule]:
    """Create or replace a schedule: one task per tick, ``every`` or ``cron``."""
    if (every is None) == (cron is None):
        raise ValueError("a schedule needs exactly one of every= and cron=")
    body = {"queue": queue, **payload_fields(payload)}
    body.update(
        _compact(
            {
                "every_ms": _ms(every),
                "cron": cron,
                "tz": tz,
                "kind": kind,
                "deadline_ms": _ms(deadline),
            }
        )
    )
    return Op("PUT", f"/v1/schedules/{_seg(name)}", Schedule.from_json, body)


def delete_schedule(name: str) -> Op[None]:
    return Op("DELETE", f"/v1/schedules/{_seg(name)}", _none)


def schedules() -> Op[list[Schedule]]:
    return Op("GET", "/v1/schedules", lambda b: [Schedule.from_json(s) for s in b["schedules"]])


def time() -> Op[datetime]:
    """The server's clock, the only clock tasks are judged by."""
    return Op("GET", "/v1/time", lambda b: parse_time(b["now"]))
