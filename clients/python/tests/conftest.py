"""A real ``spool serve`` per store for the suite: embedded (temp data dir) and PostgreSQL.

The binary is ``$SPOOL_BIN``, else the workspace's debug build
(``cargo build -p spool-cli``). PostgreSQL comes from ``$DATABASE_URL``
(default ``postgres://postgres@127.0.0.1:5432/test``); each run gets its own
schema, dropped at the end. A missing binary or an unreachable database fails
the suite with a clear message; nothing is skipped.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from spool_queue import Client, Worker

REPO = Path(__file__).resolve().parents[3]
DATABASE_URL = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")


def spool_bin() -> str:
    explicit = os.environ.get("SPOOL_BIN")
    if explicit:
        return explicit
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    path = target / "debug" / "spool"
    if not path.exists():
        pytest.fail(f"no spool binary at {path}: run `cargo build -p spool-cli` or set SPOOL_BIN")
    return str(path)


def wait_for(cond: Callable[[], bool], limit: float = 30.0) -> None:
    """Poll ``cond`` until it holds; fail the test after ``limit`` seconds."""
    start = time.monotonic()
    while not cond():
        assert time.monotonic() - start < limit, "condition not reached in time"
        time.sleep(0.05)


class Server:
    """A running ``spool serve``; ``url`` is where it listens."""

    def __init__(self, store: str):
        self.store = store
        self.dir = tempfile.mkdtemp(prefix="spool-py-")
        self.schema: str | None = None
        args = [spool_bin(), "serve", "--listen", "127.0.0.1:0"]
        if store == "postgres":
            self.schema = f"sdk_py_{secrets.token_hex(4)}"
            args += ["--postgres", DATABASE_URL, "--pg-schema", self.schema]
        else:
            args += ["--data", os.path.join(self.dir, "data")]
        self.log_path = os.path.join(self.dir, "serve.log")
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        self.url = self._wait_for_address()

    def _wait_for_address(self) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = Path(self.log_path).read_text()
            m = re.search(r"listening on (http://[0-9.:]+)", text)
            if m:
                return m.group(1)
            if self.proc.poll() is not None:
                hint = f" (is PostgreSQL up at {DATABASE_URL}?)" if self.store == "postgres" else ""
                pytest.fail(f"spool serve exited{hint}:\n{text}")
            time.sleep(0.05)
        pytest.fail(f"spool serve did not start:\n{Path(self.log_path).read_text()}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()
        if self.schema is not None:
            subprocess.run(
                ["psql", DATABASE_URL, "-qc", f"DROP SCHEMA IF EXISTS {self.schema} CASCADE"],
                check=False,
                capture_output=True,
            )
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session", params=["embedded", "postgres"])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    s = Server(request.param)
    yield s
    s.stop()


@pytest.fixture
def client(server: Server) -> Iterator[Client]:
    with Client(server.url) as c:
        yield c


@pytest.fixture
def queue() -> str:
    """A queue of this test's own, so tests share a server without seeing each other."""
    return f"q-{uuid.uuid4().hex[:12]}"


def run_until(worker: Worker, done: Callable[[], bool], limit: float = 20.0) -> None:
    """Run the worker until ``done()`` holds, then stop it and wait for its shutdown."""

    async def go() -> None:
        running = asyncio.create_task(worker.arun())
        start = time.monotonic()
        while not done():
            assert time.monotonic() - start < limit, "condition not reached in time"
            assert not running.done(), "worker exited early"
            await asyncio.sleep(0.02)
        worker.stop()
        await asyncio.wait_for(running, 30)

    asyncio.run(go())
