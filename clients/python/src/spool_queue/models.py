"""What the API answers, as typed values: tasks, enqueue results, queues, schedules.

Timestamps are timezone-aware UTC datetimes (the wire carries RFC 3339 with
milliseconds). A payload is the JSON value it was enqueued as, or ``bytes`` when
it was enqueued as bytes (the wire's ``payload_base64``): the round trip is exact.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

JSON = Any
"""A JSON value as ``json`` decodes it (dict, list, str, int, float, bool, None)."""


def parse_time(text: str) -> datetime:
    """An RFC 3339 timestamp from the wire; Python 3.10's parser wants ``+00:00``, not ``Z``."""
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return datetime.fromisoformat(text)


def format_time(at: datetime) -> str:
    """A datetime for the wire: UTC, millisecond precision; a naive one is taken as UTC."""
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    return at.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def to_ms(d: timedelta | float) -> int:
    """Milliseconds of a duration given as a timedelta or as seconds."""
    seconds = d.total_seconds() if isinstance(d, timedelta) else float(d)
    return round(seconds * 1000)


def _opt_time(value: Any) -> datetime | None:
    return None if value is None else parse_time(str(value))


def payload_fields(payload: JSON | bytes) -> dict[str, Any]:
    """The wire fields for a payload: bytes go as base64, anything else as JSON."""
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return {"payload_base64": base64.b64encode(bytes(payload)).decode("ascii")}
    return {"payload": payload}


def payload_of(obj: dict[str, Any]) -> JSON | bytes:
    encoded = obj.get("payload_base64")
    if encoded is not None:
        return base64.b64decode(encoded)
    return obj.get("payload")


@dataclass(frozen=True)
class Enqueued:
    """The outcome of one enqueue: the task's id, and whether its key matched an existing task."""

    id: int
    duplicate: bool


@dataclass(frozen=True)
class Lease:
    owner: str
    expires_at: datetime
    token: str | None
    """Only in a claim's answer."""


@dataclass(frozen=True)
class TaskError:
    attempt: int
    at: datetime
    message: str


@dataclass(frozen=True)
class Dependencies:
    """The tasks a task waits for and how they ended so far (docs/spec.md §3.2)."""

    after: list[int]
    """The ids named at enqueue, each once, in the order named."""
    waiting_on: list[int]
    """Those that have not ended yet, ascending: the task is ``pending`` while any is left."""
    parents_failed: int
    """How many ended dead or cancelled."""
    parents_completed: int
    """How many ended completed: what a batch's callback reads."""
    if_parent_fails: str
    """``cancel`` or ``run``: what a parent ending dead or cancelled does to the task."""
    parent_results: dict[int, JSON] = field(default_factory=dict)
    """The results the parents that completed with one left, by parent id (ascending)."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Dependencies | None:
        """The fields of a task's JSON; ``None`` for a task that waits for nothing."""
        if "after" not in obj:
            return None
        return cls(
            after=[int(i) for i in obj["after"]],
            waiting_on=[int(i) for i in obj["waiting_on"]],
            parents_failed=int(obj["parents_failed"]),
            parents_completed=int(obj["parents_completed"]),
            if_parent_fails=obj["if_parent_fails"],
            parent_results={int(r["id"]): r["result"] for r in obj.get("parent_results", [])},
        )


@dataclass(frozen=True)
class Task:
    id: int
    queue: str
    kind: str
    payload: JSON | bytes
    priority: int
    run_at: datetime
    key: str | None
    attempt: int
    max_attempts: int
    lease_ms: int | None
    state: str
    """``scheduled``, ``ready``, ``leased``, ``dead`` or ``pending`` (waits for other tasks)."""
    lease: Lease | None
    errors: list[TaskError]
    created_at: datetime
    updated_at: datetime
    traceparent: str | None = None
    group: str | None = None
    deps: Dependencies | None = None
    """What the task waits for, when it was enqueued with ``after``."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Task:
        lease = obj.get("lease")
        return cls(
            id=int(obj["id"]),
            queue=obj["queue"],
            kind=obj["kind"],
            payload=payload_of(obj),
            priority=int(obj["priority"]),
            run_at=parse_time(obj["run_at"]),
            key=obj.get("key"),
            attempt=int(obj["attempt"]),
            max_attempts=int(obj["max_attempts"]),
            lease_ms=obj.get("lease_ms"),
            state=obj["state"],
            lease=None
            if lease is None
            else Lease(lease["owner"], parse_time(lease["expires_at"]), lease.get("token")),
            errors=[
                TaskError(int(e["attempt"]), parse_time(e["at"]), e["message"])
                for e in obj.get("errors", [])
            ],
            created_at=parse_time(obj["created_at"]),
            updated_at=parse_time(obj["updated_at"]),
            traceparent=obj.get("traceparent"),
            group=obj.get("group"),
            deps=Dependencies.from_json(obj),
        )


@dataclass(frozen=True)
class Counts:
    scheduled: int
    ready: int
    leased: int
    dead: int
    pending: int = 0
    """Tasks waiting for others to end; servers older than dependencies send none."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Counts:
        return cls(
            int(obj["scheduled"]),
            int(obj["ready"]),
            int(obj["leased"]),
            int(obj["dead"]),
            int(obj.get("pending", 0)),
        )


@dataclass(frozen=True)
class QueueStats:
    name: str
    paused: bool
    counts: Counts
    kinds: dict[str, Counts]
    oldest_ready_age_ms: int | None
    # Whole tokens left in the rate limit's bucket; None without one.
    rate_tokens: int | None = None

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> QueueStats:
        return cls(
            name=obj["name"],
            paused=bool(obj["paused"]),
            counts=Counts.from_json(obj["counts"]),
            kinds={k: Counts.from_json(v) for k, v in obj.get("kinds", {}).items()},
            oldest_ready_age_ms=obj.get("oldest_ready_age_ms"),
            rate_tokens=obj.get("rate_tokens"),
        )


@dataclass(frozen=True)
class RateLimit:
    """A token bucket: at most ``limit`` tasks per ``period``, at most ``burst`` at once.

    Each is at least 1 (the server refuses less with ``BadRequest``). The
    bucket refills continuously, so ``RateLimit(10, 1, 5)`` hands out a task
    every 100 ms, and up to 5 at once after a quiet spell.

    ``period`` is a ``timedelta`` or seconds, kept as a ``timedelta`` of whole
    milliseconds (the server's precision), so that a limit compares equal to the
    one the server answers however it was given: ``RateLimit(10, 1, 5)`` is
    ``RateLimit(10, timedelta(seconds=1), 5)``.
    """

    limit: int
    period: timedelta | float
    burst: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "period", timedelta(milliseconds=to_ms(self.period)))

    @property
    def period_ms(self) -> int:
        return to_ms(self.period)

    def to_json(self) -> dict[str, int]:
        return {"limit": self.limit, "period_ms": self.period_ms, "burst": self.burst}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> RateLimit:
        return cls(
            int(obj["limit"]), timedelta(milliseconds=int(obj["period_ms"])), int(obj["burst"])
        )


def _opt_rate_limit(value: Any) -> RateLimit | None:
    return None if value is None else RateLimit.from_json(value)


@dataclass(frozen=True)
class QueueSettings:
    lease_ms: int
    max_attempts: int
    backoff_base_ms: int
    backoff_max_ms: int
    dedup_window_ms: int
    max_payload: int
    paused: bool
    group_concurrency: int | None = None
    """Tasks of one group leased at once; ``None``: no cap."""
    rate_limit: RateLimit | None = None
    """The queue's rate limit at claim; ``None``: no limit."""
    max_leased: int | None = None
    """The queue's tasks leased at once, across every worker; ``None``: no cap."""
    group_rate_limit: RateLimit | None = None
    """A rate limit for each group, with a bucket of its own; ``None``: no limit."""

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> QueueSettings:
        return cls(
            lease_ms=int(obj["lease_ms"]),
            max_attempts=int(obj["max_attempts"]),
            backoff_base_ms=int(obj["backoff_base_ms"]),
            backoff_max_ms=int(obj["backoff_max_ms"]),
            dedup_window_ms=int(obj["dedup_window_ms"]),
            max_payload=int(obj["max_payload"]),
            paused=bool(obj["paused"]),
            group_concurrency=obj.get("group_concurrency"),
            rate_limit=_opt_rate_limit(obj.get("rate_limit")),
            max_leased=obj.get("max_leased"),
            group_rate_limit=_opt_rate_limit(obj.get("group_rate_limit")),
        )


@dataclass(frozen=True)
class Schedule:
    name: str
    queue: str
    kind: str | None
    payload: JSON | bytes
    every_ms: int | None
    cron: str | None
    tz: str | None
    deadline_ms: int | None
    last_fire_at: datetime | None
    next_fire_at: datetime | None

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Schedule:
        return cls(
            name=obj["name"],
            queue=obj["queue"],
            kind=obj.get("kind"),
            payload=payload_of(obj),
            every_ms=obj.get("every_ms"),
            cron=obj.get("cron"),
            tz=obj.get("tz"),
            deadline_ms=obj.get("deadline_ms"),
            last_fire_at=_opt_time(obj.get("last_fire_at")),
            next_fire_at=_opt_time(obj.get("next_fire_at")),
        )


@dataclass(frozen=True)
class TaskPage:
    tasks: list[Task]
    next_cursor: str | None
