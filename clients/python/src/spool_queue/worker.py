"""The worker runtime: claim tasks, run handlers, ack, fail, extend, shut down cleanly.

Per queue, one acquisition loop claims batches sized to the free slots (long
polling, so an idle worker makes one request per ``poll`` and picks up new work
at once); each claimed task runs at once, so no claimed task waits in a buffer
while its lease runs. A sync handler runs in the worker's thread pool (see
``_threads``), an ``async def`` handler on the event loop.

Outcomes: return → ack (the acks of concurrent runs go out together in one
batch request); return a value other than ``None`` → ack on its own, with the
value as the task's result, handed to the tasks waiting for it (``ctx.parent_results``);
a value that is not JSON or over 4,096 bytes fails the task instead; an
exception → fail, and the server schedules the retry with its backoff;
``Retry``/``Discard``/``Snooze`` as documented in ``outcomes``. A
run that lives past half its lease has the lease extended in the background. At
the deadline an async handler is cancelled, a sync one sees ``ctx.cancelled``
set, and the task fails with "deadline exceeded".

Cancellation: one watcher per worker long-polls ``wait_leases_lost`` over the
leases of its runs, so a task cancelled (or otherwise lost: its lease taken
over) while it runs is noticed within the server's 100 ms. Its run is cut off
as at a deadline (``ctx.lost`` and ``ctx.cancelled`` set, an async handler
cancelled) but nothing is reported: the server would refuse it.

Shutdown (``stop()``, or SIGINT/SIGTERM under ``run()``): stop claiming, let
running handlers finish within ``shutdown_grace``, then release the rest so no
attempt is burned. A second stop skips what is left of the grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import secrets
import signal
import socket
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar, overload

from ._ops import result_text
from ._threads import ThreadPool
from .client import AsyncClient, Client
from .context import Context
from .errors import BadRequest, LeaseLost, NotFound, SpoolError
from .models import Task
from .outcomes import Discard, Retry, Snooze

log = logging.getLogger("spool_queue.worker")

Handler = Callable[[Context], Any]
"""A sync function or an ``async def`` taking the run's context."""
H = TypeVar("H", bound=Handler)

# A run's deadline comes this long before its task's own lease ends, so that
# the "deadline exceeded" failure reaches the server while the lease holds.
_LEASE_MARGIN = 0.5
_FAILURE_TEXT_LIMIT = 4000
# How long one lease watch waits on the server; how long new leases wait to be
# watched, so that a run shorter than that costs the server no watch at all.
_WATCH_WAIT = 10.0
_WATCH_GAP = 0.05
_WATCH_MAX = 10_000


@dataclass
class _Route:
    fn: Handler
    timeout: float


@dataclass
class _Queue:
    name: str
    concurrency: int
    routes: dict[str | None, _Route] = field(default_factory=dict)
    running: int = 0
    freed: asyncio.Event | None = None


def _seconds(d: timedelta | float) -> float:
    return d.total_seconds() if isinstance(d, timedelta) else float(d)


def _failure_text(e: BaseException) -> str:
    head = f"{type(e).__name__}: {e}\n"
    trace = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return (head + trace[-max(0, _FAILURE_TEXT_LIMIT - len(head)) :]).rstrip()


def _in_thread(pool: ThreadPool, fn: Handler, ctx: Context) -> asyncio.Future[Any]:
    """Run a sync handler on the pool; its result or exception settles the future."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if fut.done():
            return
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)

    def done(ok: bool, value: Any) -> None:
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:
            pass  # the loop is gone: the worker has shut down and released the task

    pool.submit(lambda: fn(ctx), done)
    return fut


async def _first(*aws: Awaitable[Any], timeout: float | None = None) -> None:
    """Wait until the first of ``aws`` completes (or the timeout); cancel the rest."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()


class _Slot:
    """One run's place in its queue's concurrency limit; freeing it twice is harmless."""

    def __init__(self, q: _Queue):
        self._q: _Queue | None = q

    def free(self) -> None:
        q, self._q = self._q, None
        if q is not None and q.freed is not None:
            q.running -= 1
            q.freed.set()


class _Acker:
    """Coalesces the acks of concurrent runs: one batch request in flight at a time."""

    def __init__(self, client: AsyncClient):
        self._client = client
        self._pending: list[tuple[int, str, asyncio.Future[None]]] = []
        self._flushing: asyncio.Task[None] | None = None

    async def ack(self, task_id: int, token: str) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((task_id, token, fut))
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.create_task(self._flush())
        await fut

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending[:1000], self._pending[1000:]
            try:
                results = await self._client.ack_many([(i, t) for i, t, _ in batch])
            except SpoolError as e:
                for _, _, fut in batch:
                    fut.set_exception(e)
                continue
            for (task_id, _, fut), r in zip(batch, results, strict=True):
                if r.status == 204:
                    fut.set_result(None)
                elif r.code == "lease_lost":
                    fut.set_exception(LeaseLost(f"task {task_id}", status=r.status))
                else:
                    fut.set_exception(NotFound(f"task {task_id}", status=r.status))


class _Watcher:
    """Long-polls ``wait_leases_lost`` over the leases of the worker's runs.

    One poll in flight at a time, covering every lease watched when it was
    sent. A new one goes out when it answers, or when leases added since are
    still running ``_WATCH_GAP`` later (then it replaces the one in flight). A
    lease unwatched needs no new poll: its task was acked, failed or released,
    so the poll in flight answers it lost, and the next poll leaves it out.
    """

    def __init__(self, client: AsyncClient):
        self._client = client
        self._leases: dict[int, tuple[str, Callable[[], None]]] = {}
        self._added = asyncio.Event()

    def watch(self, task_id: int, token: str, on_lost: Callable[[], None]) -> None:
        self._leases[task_id] = (token, on_lost)
        self._added.set()

    def unwatch(self, task_id: int, token: str) -> None:
        entry = self._leases.get(task_id)
        if entry is not None and entry[0] == token:
            del self._leases[task_id]

    def lost(self, task_id: int, token: str) -> None:
        """The lease is lost (found so here or by a refused extension): tell its run once."""
        entry = self._leases.get(task_id)
        if entry is not None and entry[0] == token:
            del self._leases[task_id]
            entry[1]()

    async def run(self) -> None:
        """Watch until cancelled."""
        backoff = 0.1
        while True:
            if not self._leases:
                self._added.clear()
                await self._added.wait()
                await asyncio.sleep(_WATCH_GAP)
                continue
            self._added.clear()
            sent_tokens = {i: t for i, (t, _) in list(self._leases.items())[:_WATCH_MAX]}
            poll = asyncio.ensure_future(
                self._client.wait_leases_lost(list(sent_tokens.items()), wait=_WATCH_WAIT)
            )
            try:
                while not poll.done():
                    await _first(asyncio.shield(poll), self._added.wait())
                    if poll.done():
                        break
                    # New leases: those still running after the gap get a poll
                    # that replaces this one.
                    self._added.clear()
                    await _first(asyncio.shield(poll), timeout=_WATCH_GAP)
                    if not self._leases.keys() <= sent_tokens.keys():
                        break
            finally:
                if not poll.done():
                    poll.cancel()
                    await asyncio.wait([poll])
            if poll.cancelled():
                continue
            try:
                lost = poll.result()
            except Exception as e:  # a watcher that dies would leave every run unwatched
                log.warning("watching leases failed (%r); again in %.1fs", e, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
                continue
            backoff = 0.1
            for task_id in lost:
                token = sent_tokens.get(task_id)
                if token is not None:
                    self.lost(task_id, token)


class Worker:
    """Runs handlers for the tasks of one or more queues.

    ``Worker(client, concurrency=10)``; register handlers with
    ``worker.handle("emails", send_email)`` or the decorator
    ``@worker.handle("emails")``, then ``worker.run()`` (blocks; SIGINT/SIGTERM
    shut it down gracefully) or ``await worker.arun()``.

    ``lease``: how long a claim leases a task (extended while the run goes on);
    ``poll``: how long one claim waits for work (long poll, at most 30 s);
    ``timeout``: a handler's deadline unless ``handle`` sets its own;
    ``shutdown_grace``: how long running handlers may finish after a stop
    before their tasks are released.
    """

    def __init__(
        self,
        client: Client | AsyncClient | str,
        *,
        concurrency: int = 10,
        lease: timedelta | float = 30.0,
        poll: timedelta | float = 5.0,
        timeout: timedelta | float = 15 * 60.0,
        shutdown_grace: timedelta | float = 30.0,
        worker_id: str | None = None,
    ):
        if isinstance(client, str):
            self._url, self._token = client, None
        else:
            self._url, self._token = client.url, client.token
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency
        self.lease = _seconds(lease)
        self.poll = min(_seconds(poll), 30.0)
        self.timeout = _seconds(timeout)
        self.shutdown_grace = _seconds(shutdown_grace)
        self.id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        self._queues: dict[str, _Queue] = {}
        self._clock_offset = timedelta(0)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = asyncio.Event()
        self._cut = asyncio.Event()
        self._client: AsyncClient | None = None
        self._acker: _Acker | None = None
        self._watcher: _Watcher | None = None
        self._threads = ThreadPool("spool-handler")

    @overload
    def handle(
        self,
        queue: str,
        fn: H,
        *,
        kind: str | None = None,
        concurrency: int | None = None,
        timeout: timedelta | float | None = None,
    ) -> H: ...

    @overload
    def handle(
        self,
        queue: str,
        fn: None = None,
        *,
        kind: str | None = None,
        concurrency: int | None = None,
        timeout: timedelta | float | None = None,
    ) -> Callable[[H], H]: ...

    def handle(
        self,
        queue: str,
        fn: Handler | None = None,
        *,
        kind: str | None = None,
        concurrency: int | None = None,
        timeout: timedelta | float | None = None,
    ) -> Any:
        """Register ``fn`` for a queue's tasks (only those of ``kind``, if given).

        ``concurrency`` sets the queue's own limit (default: the worker's);
        ``timeout`` this handler's deadline. Returns ``fn``, or a decorator
        when ``fn`` is omitted.
        """

        def register(f: Handler) -> Handler:
            q = self._queues.setdefault(queue, _Queue(queue, self.concurrency))
            if concurrency is not None:
                q.concurrency = concurrency
            q.routes[kind] = _Route(f, self.timeout if timeout is None else _seconds(timeout))
            return f

        return register if fn is None else register(fn)

    def stop(self) -> None:
        """Stop claiming and shut down; a second call releases running tasks at once.

        Safe to call from any thread.
        """
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._stop_now)

    def _stop_now(self) -> None:
        if self._stopping.is_set():
            self._cut.set()
        self._stopping.set()

    def run(self) -> None:
        """Run until SIGINT or SIGTERM (or ``stop()``), then shut down gracefully."""
        asyncio.run(self.arun(handle_signals=True))

    async def arun(self, *, handle_signals: bool = False) -> None:
        """Run on the current event loop until ``stop()`` (or a signal, if asked)."""
        if not self._queues:
            raise ValueError("no handlers registered")
        loop = self._loop = asyncio.get_running_loop()
        self._stopping, self._cut = asyncio.Event(), asyncio.Event()
        self._threads = ThreadPool("spool-handler")
        signals = (signal.SIGINT, signal.SIGTERM) if handle_signals else ()
        for sig in signals:
            loop.add_signal_handler(sig, self._stop_now)
        try:
            async with AsyncClient(self._url, self._token) as client:
                self._client, self._acker = client, _Acker(client)
                self._watcher = _Watcher(client)
                await self._learn_clock(client)
                await self._serve()
        finally:
            self._threads.close()
            for sig in signals:
                loop.remove_signal_handler(sig)

    async def _serve(self) -> None:
        assert self._watcher is not None
        runs: set[asyncio.Task[None]] = set()
        watching = asyncio.create_task(self._watcher.run())
        loops = [asyncio.create_task(self._acquire(q, runs)) for q in self._queues.values()]
        log.info("worker %s started on %s", self.id, ", ".join(self._queues))
        await self._stopping.wait()
        await asyncio.gather(*loops)
        if runs:
            log.info("stopping: %d runs in flight, grace %.1fs", len(runs), self.shutdown_grace)
            await _first(asyncio.wait(set(runs)), self._cut.wait(), timeout=self.shutdown_grace)
        self._cut.set()
        if runs:
            await asyncio.gather(*runs)
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
        log.info("worker %s stopped", self.id)

    async def _learn_clock(self, client: AsyncClient) -> None:
        """How far the server's clock is from ours: Retry/Snooze delays count on its clock."""
        before = time.time()
        now = await client.time()
        after = time.time()
        self._clock_offset = now - datetime.fromtimestamp((before + after) / 2, timezone.utc)

    def _server_now(self) -> datetime:
        return datetime.now(timezone.utc) + self._clock_offset

    async def _acquire(self, q: _Queue, runs: set[asyncio.Task[None]]) -> None:
        assert self._client is not None
        q.freed = asyncio.Event()
        backoff = 0.1
        while not self._stopping.is_set():
            free = q.concurrency - q.running
            if free <= 0:
                q.freed.clear()
                await _first(self._stopping.wait(), q.freed.wait())
                continue
            sent = time.monotonic()
            try:
                tasks = await self._client.claim(
                    q.name, self.id, max_tasks=min(free, 1000), lease=self.lease, wait=self.poll
                )
            except SpoolError as e:
                log.warning("claim from %s failed (%s); again in %.1fs", q.name, e, backoff)
                await _first(self._stopping.wait(), timeout=backoff)
                backoff = min(backoff * 2, 10.0)
                continue
            backoff = 0.1
            for task in tasks:
                q.running += 1
                run = asyncio.create_task(self._run(q, task, sent))
                runs.add(run)
                run.add_done_callback(runs.discard)

    async def _run(self, q: _Queue, task: Task, sent: float) -> None:
        slot = _Slot(q)
        token = task.lease.token if task.lease is not None else None
        try:
            if token is None:
                log.error("task %d was claimed without a lease token", task.id)
            elif self._stopping.is_set():
                await self._report(self._release(task.id, token))
            else:
                route = q.routes.get(task.kind) or q.routes.get(None)
                if route is None:
                    message = f"no handler for kind {task.kind!r}"
                    await self._report(self._fail(task.id, token, message))
                else:
                    await self._execute(route, task, token, sent, slot)
        finally:
            slot.free()

    def _deadline(self, route: _Route, task: Task, sent: float) -> float:
        deadline = sent + route.timeout
        if task.lease_ms is not None:
            deadline = min(deadline, sent + task.lease_ms / 1000 - _LEASE_MARGIN)
        return deadline

    async def _keep_lease(self, task: Task, token: str, sent: float) -> None:
        """Extend the lease each time half of it has passed, while the run goes on."""
        assert self._client is not None and self._watcher is not None
        expires = sent + self.lease
        while True:
            await asyncio.sleep(max(0.0, expires - time.monotonic()) / 2)
            asked = time.monotonic()
            try:
                await self._client.extend(task.id, token, self.lease)
            except (LeaseLost, NotFound) as e:
                log.warning("task %d: lease lost while running (%s)", task.id, e)
                self._watcher.lost(task.id, token)
                return
            except SpoolError as e:
                log.warning("task %d: extending the lease failed: %s", task.id, e)
                continue
            expires = asked + self.lease

    async def _execute(
        self, route: _Route, task: Task, token: str, sent: float, slot: _Slot
    ) -> None:
        assert self._watcher is not None
        ctx = Context(task, self._deadline(route, task, sent))
        lost = asyncio.Event()

        def on_lost() -> None:
            ctx.lost = True
            ctx.cancelled.set()
            lost.set()

        self._watcher.watch(task.id, token, on_lost)
        is_async = inspect.iscoroutinefunction(route.fn)
        handler = (
            asyncio.ensure_future(route.fn(ctx))
            if is_async
            else _in_thread(self._threads, route.fn, ctx)
        )
        # A task with its own lease (a schedule's deadline) is never extended past it.
        keeper = (
            None
            if task.lease_ms is not None
            else asyncio.create_task(self._keep_lease(task, token, sent))
        )
        try:
            await _first(
                asyncio.shield(handler), self._cut.wait(), lost.wait(), timeout=ctx.remaining()
            )
        finally:
            self._watcher.unwatch(task.id, token)
            if keeper is not None:
                keeper.cancel()
        if ctx.lost:
            await self._drop(task, handler, is_async, slot)
            return
        if handler.done():
            # The slot frees before the ack goes out, so the next claim and this
            # ack travel together (and share the server's group commit).
            slot.free()
            await self._report(self._finish(task, token, handler))
            return
        ctx.cancelled.set()
        if is_async:
            handler.cancel()
            slot.free()
        if self._cut.is_set():
            await self._report(self._release(task.id, token))
            return
        log.warning("task %d: deadline exceeded", task.id)
        await self._report(self._fail(task.id, token, "deadline exceeded"))
        if not is_async:
            # A thread cannot be stopped: its slot stays taken until it returns.
            await asyncio.wait([handler])

    async def _drop(
        self, task: Task, handler: asyncio.Future[Any], is_async: bool, slot: _Slot
    ) -> None:
        """The lease is lost: cut the run off and report nothing, the server would refuse it."""
        log.debug("task %d: lease lost (cancelled, or claimed by another); run dropped", task.id)
        if is_async:
            handler.cancel()
            slot.free()
        # A thread cannot be stopped: its slot stays taken until it returns.
        await asyncio.wait([handler])
        if not handler.cancelled():
            error = handler.exception()
            outcome = error if error is not None else handler.result()
            log.debug("task %d: outcome of a lost run dropped: %r", task.id, outcome)

    async def _finish(self, task: Task, token: str, handler: asyncio.Future[Any]) -> None:
        assert self._acker is not None and self._client is not None
        error = handler.exception()
        outcome = error if error is not None else handler.result()
        if isinstance(outcome, Retry):
            at = outcome.at or self._server_now() + timedelta(seconds=outcome.delay)
            await self._fail(task.id, token, outcome.message, retry_at=at)
        elif isinstance(outcome, Discard):
            await self._fail(task.id, token, outcome.message, discard=True)
        elif isinstance(outcome, Snooze):
            at = outcome.at or self._server_now() + timedelta(seconds=outcome.delay)
            await self._client.snooze(task.id, token, at)
        elif error is not None:
            log.info("task %d failed: %r", task.id, error)
            await self._fail(task.id, token, _failure_text(error))
        elif outcome is None:
            await self._acker.ack(task.id, token)
        else:
            await self._ack_result(task.id, token, outcome)

    async def _ack_result(self, task_id: int, token: str, result: Any) -> None:
        """Ack on its own with the handler's return value as the task's result.

        A value that is not JSON or too large, or that the server refuses, fails
        the task with the reason, as an exception would: never dropped unseen.
        """
        assert self._client is not None
        try:
            result_text(result)
        except ValueError as e:
            log.info("task %d: result refused: %s", task_id, e)
            await self._fail(task_id, token, f"the handler's return value: {e}")
            return
        try:
            await self._client.ack(task_id, token, result=result)
        except BadRequest as e:
            log.info("task %d: the server refused its result: %s", task_id, e)
            await self._fail(task_id, token, f"the server refused the handler's return value: {e}")

    async def _fail(
        self,
        task_id: int,
        token: str,
        message: str,
        *,
        retry_at: datetime | None = None,
        discard: bool = False,
    ) -> None:
        assert self._client is not None
        await self._client.fail(task_id, token, message, retry_at=retry_at, discard=discard)

    async def _release(self, task_id: int, token: str) -> None:
        assert self._client is not None
        await self._client.release(task_id, token)

    async def _report(self, call: Awaitable[None]) -> None:
        """Tell the server how a run ended; if that fails, the lease expires and it runs again."""
        try:
            await call
        except SpoolError as e:
            log.warning("reporting a run's end failed: %s", e)
