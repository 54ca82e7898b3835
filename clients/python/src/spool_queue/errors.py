"""Errors raised by the client, one class per stable error code of Spool's API.

The server answers every error as ``{"error": {"code", "message"}}``; the code is
stable and the class is chosen by it, so callers can ``except LeaseLost`` rather
than compare strings. A code this version does not know still raises
:class:`SpoolError` with the code kept. Failures to reach the server at all
(refused connection, timeout) raise :class:`ConnectionFailed`.
"""

from __future__ import annotations


class SpoolError(Exception):
    """An error answer from the server (or no answer: :class:`ConnectionFailed`)."""

    code: str = "unknown"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.status = status

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class BadRequest(SpoolError):
    code = "bad_request"


class Unauthorized(SpoolError):
    code = "unauthorized"


class NotFound(SpoolError):
    code = "not_found"


class MethodNotAllowed(SpoolError):
    code = "method_not_allowed"


class RequestTimeout(SpoolError):
    code = "request_timeout"


class LeaseLost(SpoolError):
    """The lease token is not the task's current one: the lease expired or moved on."""

    code = "lease_lost"


class LeaseHeld(SpoolError):
    """The task is leased, so it cannot be changed."""

    code = "lease_held"


class PayloadTooLarge(SpoolError):
    code = "payload_too_large"


class UnsupportedMediaType(SpoolError):
    code = "unsupported_media_type"


class Overloaded(SpoolError):
    code = "overloaded"


class HeadersTooLarge(SpoolError):
    code = "headers_too_large"


class Internal(SpoolError):
    code = "internal"


class Unavailable(SpoolError):
    """The server's store is down; the server reconnects by itself."""

    code = "unavailable"


class ConnectionFailed(SpoolError):
    """The server could not be reached, or did not answer in time."""

    code = "connection_failed"


_BY_CODE: dict[str, type[SpoolError]] = {
    cls.code: cls
    for cls in (
        BadRequest,
        Unauthorized,
        NotFound,
        MethodNotAllowed,
        RequestTimeout,
        LeaseLost,
        LeaseHeld,
        PayloadTooLarge,
        UnsupportedMediaType,
        Overloaded,
        HeadersTooLarge,
        Internal,
        Unavailable,
    )
}


def error_for(code: str, message: str, status: int) -> SpoolError:
    """The exception for an error answer: its code's class, or SpoolError for a new code."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return SpoolError(message, code=code, status=status)
    return cls(message, status=status)
