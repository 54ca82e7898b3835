"""What a handler sees: its task, its parents' results, its deadline and a cancellation signal.

The deadline is the handler's timeout, or the task's own lease (a schedule's
deadline) when that comes first; it is measured on this process's monotonic
clock from the moment the claim was sent, so it never trusts a comparison of
two machines' clocks. ``cancelled`` is a ``threading.Event`` so that a sync
handler in its thread and an async one on the loop can both check it; an
async handler is also cancelled (``asyncio.CancelledError``) at the same moment.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from .models import JSON, Dependencies, Task


@dataclass
class Context:
    task: Task
    deadline_monotonic: float
    """``time.monotonic()`` at the deadline."""
    cancelled: threading.Event = field(default_factory=threading.Event)
    """Set when the run is cut off: its deadline, a shutdown past its grace
    period, or its lease lost (the task cancelled, or claimed by another)."""
    lost: bool = False
    """True once the run's lease is lost: the task was cancelled (or completed,
    or its lease expired and another claim holds it). Set before ``cancelled``;
    the worker then reports nothing for the run, whatever the handler returns."""

    @property
    def id(self) -> int:
        return self.task.id

    @property
    def queue(self) -> str:
        return self.task.queue

    @property
    def kind(self) -> str:
        return self.task.kind

    @property
    def key(self) -> str | None:
        return self.task.key

    @property
    def group(self) -> str | None:
        """The group the task was enqueued in, if any."""
        return self.task.group

    @property
    def deps(self) -> Dependencies | None:
        """The tasks it waited for and how they ended (a batch callback's counts), if any."""
        return self.task.deps

    @property
    def parent_results(self) -> dict[int, JSON]:
        """The results the tasks it waited for left, by parent id: those that
        completed returning a value (a batch callback reads every member's)."""
        return self.task.deps.parent_results if self.task.deps is not None else {}

    def parent_result(self, parent_id: int, default: JSON = None) -> JSON:
        """The result task ``parent_id`` left for this one; ``default`` when it is
        not a parent of this task or completed without one."""
        return self.parent_results.get(parent_id, default)

    @property
    def attempt(self) -> int:
        """1 on the first run, 2 on the first retry, and so on."""
        return self.task.attempt

    @property
    def max_attempts(self) -> int:
        return self.task.max_attempts

    @property
    def payload(self) -> JSON | bytes:
        return self.task.payload

    def remaining(self) -> float:
        """Seconds until the deadline; 0 once it has passed."""
        return max(0.0, self.deadline_monotonic - time.monotonic())

    @property
    def deadline(self) -> datetime:
        """The deadline as a UTC time on this machine's clock."""
        return datetime.now(timezone.utc) + timedelta(seconds=self.remaining())
