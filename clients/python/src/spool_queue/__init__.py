"""Spool client and worker runtime: enqueue tasks over HTTP, run them with handlers.

>>> from spool_queue import Client, Worker
>>> client = Client("http://127.0.0.1:7700")
>>> client.enqueue("emails", {"to": "ada@example.com"})
"""

from ._ops import AckResult, TaskSpec
from .client import AsyncClient, Client
from .context import Context
from .errors import (
    BadRequest,
    ConnectionFailed,
    HeadersTooLarge,
    Internal,
    LeaseHeld,
    LeaseLost,
    MethodNotAllowed,
    NotFound,
    Overloaded,
    PayloadTooLarge,
    RequestTimeout,
    SpoolError,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from .models import (
    Counts,
    Dependencies,
    Enqueued,
    Lease,
    QueueSettings,
    QueueStats,
    RateLimit,
    Schedule,
    Task,
    TaskError,
    TaskPage,
)
from .outcomes import Discard, Outcome, Retry, Snooze
from .worker import Handler, Worker

__all__ = [
    "AckResult",
    "AsyncClient",
    "BadRequest",
    "Client",
    "ConnectionFailed",
    "Context",
    "Counts",
    "Dependencies",
    "Discard",
    "Enqueued",
    "Handler",
    "HeadersTooLarge",
    "Internal",
    "Lease",
    "LeaseHeld",
    "LeaseLost",
    "MethodNotAllowed",
    "NotFound",
    "Outcome",
    "Overloaded",
    "PayloadTooLarge",
    "QueueSettings",
    "QueueStats",
    "RateLimit",
    "RequestTimeout",
    "Retry",
    "Schedule",
    "Snooze",
    "SpoolError",
    "Task",
    "TaskError",
    "TaskPage",
    "TaskSpec",
    "Unauthorized",
    "Unavailable",
    "UnsupportedMediaType",
    "Worker",
]
