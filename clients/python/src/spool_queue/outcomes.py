"""What a handler can say besides "done": retry at a time, discard, or snooze.

Raise one (or return it) from a handler. ``Retry`` and ``Snooze`` take either an
absolute ``at`` or a ``delay``; a delay is counted on the server's clock (the
worker learns its offset when it starts), since the store's clock is the only
clock a task is judged by.
"""

from __future__ import annotations

from datetime import datetime, timedelta


class Outcome(Exception):
    """Base of the explicit outcomes; a handler raises or returns one."""


def _when(at: datetime | None, delay: timedelta | float | None) -> tuple[datetime | None, float]:
    if at is not None and delay is not None:
        raise ValueError("give at= or delay=, not both")
    if delay is None:
        return at, 0.0
    return None, delay.total_seconds() if isinstance(delay, timedelta) else float(delay)


class Retry(Outcome):
    """Fail this attempt and run again at ``at`` (or after ``delay``) instead of the backoff.

    The attempt counts: a task out of attempts goes dead as with any failure.
    """

    def __init__(
        self,
        message: str = "retry requested",
        *,
        at: datetime | None = None,
        delay: timedelta | float | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.at, self.delay = _when(at, delay)


class Discard(Outcome):
    """A permanent failure: the task goes dead at once, whatever attempts remain."""

    def __init__(self, message: str = "discarded"):
        super().__init__(message)
        self.message = message


class Snooze(Outcome):
    """Not now: run again at ``at`` (or after ``delay``) without counting the attempt."""

    def __init__(self, *, at: datetime | None = None, delay: timedelta | float | None = None):
        if at is None and delay is None:
            raise ValueError("Snooze needs at= or delay=")
        super().__init__("snoozed")
        self.at, self.delay = _when(at, delay)
