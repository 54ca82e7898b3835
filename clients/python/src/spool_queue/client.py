"""Client (blocking) and AsyncClient (asyncio): the producer and admin side of Spool.

Both have the same methods, each one HTTP request: every operation is written
once in ``_ops`` (its signature, its docstring, its request and how to read
the answer), and ``_blocking``/``_awaiting`` make it a method of each client.
A task is addressed by its id, or by ``(queue, key)`` for a task enqueued with
an idempotency key. Durations are ``timedelta`` or seconds.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx

from . import _ops
from ._ops import Op
from .errors import ConnectionFailed

T = TypeVar("T")
P = ParamSpec("P")

DEFAULT_URL = "http://127.0.0.1:7700"


def _headers(token: str | None) -> dict[str, str]:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


def _request(http: httpx.Client | httpx.AsyncClient, op: Op[Any]) -> httpx.Request:
    timeout: Any = httpx.USE_CLIENT_DEFAULT
    if op.timeout is not None:
        timeout = httpx.Timeout(10.0, read=op.timeout)
    return http.build_request(
        op.method, op.path, json=op.json, params=op.params or None, timeout=timeout
    )


def _method(call: Callable[..., Any], make: Callable[..., Any]) -> None:
    """Give a client method the name, docstring and parameters of its operation."""
    functools.update_wrapper(call, make, updated=())
    del call.__wrapped__  # type: ignore[attr-defined]
    sig = inspect.signature(make)
    this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    call.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[this, *sig.parameters.values()], return_annotation=inspect.Signature.empty
    )


def _blocking(make: Callable[P, Op[T]]) -> Callable[Concatenate[Client, P], T]:
    def call(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._run(make(*args, **kwargs))

    _method(call, make)
    return call


def _awaiting(
    make: Callable[P, Op[T]],
) -> Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]]:
    async def call(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run(make(*args, **kwargs))

    _method(call, make)
    return call


class Client:
    """A blocking client: ``Client("http://127.0.0.1:7700", token=None)``.

    Safe to share between threads (httpx's connection pool is). Close it, or use
    it as a context manager.
    """

    def __init__(self, url: str = DEFAULT_URL, token: str | None = None, *, timeout: float = 30.0):
        self.url = url
        self.token = token
        self._http = httpx.Client(base_url=url, headers=_headers(token), timeout=timeout)

    def _run(self, op: Op[T]) -> T:
        try:
            response = self._http.send(_request(self._http, op))
        except httpx.TransportError as e:
            raise ConnectionFailed(f"{self.url}: {e!r}") from e
        return op.finish(response)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    enqueue = _blocking(_ops.enqueue)
    enqueue_many = _blocking(_ops.enqueue_many)
    claim = _blocking(_ops.claim)
    ack = _blocking(_ops.ack)
    ack_many = _blocking(_ops.ack_many)
    fail = _blocking(_ops.fail)
    release = _blocking(_ops.release)
    extend = _blocking(_ops.extend)
    snooze = _blocking(_ops.snooze)
    wait_leases_lost = _blocking(_ops.wait_leases_lost)
    get = _blocking(_ops.get)
    update = _blocking(_ops.update)
    cancel = _blocking(_ops.cancel)
    retry = _blocking(_ops.retry)
    retry_dead = _blocking(_ops.retry_dead)
    tasks = _blocking(_ops.tasks)
    stats = _blocking(_ops.stats)
    pause = _blocking(_ops.pause)
    resume = _blocking(_ops.resume)
    settings = _blocking(_ops.settings)
    put_queue = _blocking(_ops.put_queue)
    put_schedule = _blocking(_ops.put_schedule)
    delete_schedule = _blocking(_ops.delete_schedule)
    schedules = _blocking(_ops.schedules)
    time = _blocking(_ops.time)


class AsyncClient:
    """The asyncio client: ``AsyncClient("http://127.0.0.1:7700", token=None)``.

    The same methods as :class:`Client`, as coroutines. Use it from one event
    loop; close it (``await client.aclose()``), or use it as an async context
    manager.
    """

    def __init__(self, url: str = DEFAULT_URL, token: str | None = None, *, timeout: float = 30.0):
        self.url = url
        self.token = token
        self._http = httpx.AsyncClient(base_url=url, headers=_headers(token), timeout=timeout)

    async def _run(self, op: Op[T]) -> T:
        try:
            response = await self._http.send(_request(self._http, op))
        except httpx.TransportError as e:
            raise ConnectionFailed(f"{self.url}: {e!r}") from e
        return op.finish(response)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    enqueue = _awaiting(_ops.enqueue)
    enqueue_many = _awaiting(_ops.enqueue_many)
    claim = _awaiting(_ops.claim)
    ack = _awaiting(_ops.ack)
    ack_many = _awaiting(_ops.ack_many)
    fail = _awaiting(_ops.fail)
    release = _awaiting(_ops.release)
    extend = _awaiting(_ops.extend)
    snooze = _awaiting(_ops.snooze)
    wait_leases_lost = _awaiting(_ops.wait_leases_lost)
    get = _awaiting(_ops.get)
    update = _awaiting(_ops.update)
    cancel = _awaiting(_ops.cancel)
    retry = _awaiting(_ops.retry)
    retry_dead = _awaiting(_ops.retry_dead)
    tasks = _awaiting(_ops.tasks)
    stats = _awaiting(_ops.stats)
    pause = _awaiting(_ops.pause)
    resume = _awaiting(_ops.resume)
    settings = _awaiting(_ops.settings)
    put_queue = _awaiting(_ops.put_queue)
    put_schedule = _awaiting(_ops.put_schedule)
    delete_schedule = _awaiting(_ops.delete_schedule)
    schedules = _awaiting(_ops.schedules)
    time = _awaiting(_ops.time)
