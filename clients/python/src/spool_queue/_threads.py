"""The thread pool that runs sync handlers: daemon threads, grown on demand and reused.

Not ``concurrent.futures.ThreadPoolExecutor``: its threads are joined when the
interpreter exits, so one handler stuck past a shutdown (a thread cannot be
stopped from outside) would keep the process alive after its task was
released. These threads are daemons, so they never hold up an exit.

Invariant: ``_idle`` counts the threads that finished their call and that no
``submit`` has claimed since, so each submitted call has a thread of its own
and none waits behind a running handler. A thread counts itself idle before it
reports its result, so the pool holds no more threads than the most calls ever
running at once, which the worker's concurrency limits bound.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

Call = Callable[[], Any]
Done = Callable[[bool, Any], None]
"""Told ``(True, result)`` or ``(False, exception)``; must not raise."""


class ThreadPool:
    def __init__(self, name: str):
        self._name = name
        self._jobs: queue.SimpleQueue[tuple[Call, Done] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._started = 0
        self._closed = False

    def submit(self, call: Call, done: Done) -> None:
        """Run ``call`` on a free thread (starting one if none is free), then ``done``."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the thread pool is closed")
            if self._idle > 0:
                self._idle -= 1
            else:
                self._started += 1
                name = f"{self._name}-{self._started}"
                threading.Thread(target=self._serve, daemon=True, name=name).start()
        self._jobs.put((call, done))

    def close(self) -> None:
        """Let the idle threads exit, and each busy one once its call returns."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, 0
        for _ in range(idle):
            self._jobs.put(None)

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            call, done = job
            try:
                outcome: tuple[bool, Any] = (True, call())
            except BaseException as e:
                outcome = (False, e)
            # Counted free before ``done`` publishes the result: whoever the
            # result frees to submit the next call finds this thread idle.
            with self._lock:
                closed = self._closed
                if not closed:
                    self._idle += 1
            done(*outcome)
            if closed:
                return
