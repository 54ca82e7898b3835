"""Worker processes against a real server: SIGKILL mid-task, SIGTERM, many processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import Server, wait_for

from spool_queue import Client, NotFound, TaskSpec

PROC = str(Path(__file__).with_name("worker_proc.py"))
Spawn = Callable[..., tuple[subprocess.Popen[bytes], Path]]
"""Starts ``worker_proc.py URL QUEUE MODE [options]``; answers the process and its output."""


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawn]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(url: str, queue: str, mode: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        out = tmp_path / f"out-{len(procs)}"
        proc = subprocess.Popen([sys.executable, PROC, url, queue, mode, str(out), *args])
        procs.append(proc)
        wait_for(lambda: "ready" in lines(out))
        return proc, out

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_a_task_whose_worker_was_killed_runs_again_after_its_lease(
    server: Server,
    client: Client,
    queue: str,
    spawn: Callable[..., tuple[subprocess.Popen[bytes], Path]],
) -> None:
    enq = client.enqueue(queue, {"seconds": 60})
    first, out1 = spawn(server.url, queue, "sleep", "--lease", "1")
    wait_for(lambda: f"start {enq.id}" in lines(out1))
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    second, out2 = spawn(server.url, queue, "sleep", "--lease", "1")
    wait_for(lambda: f"start {enq.id}" in lines(out2), limit=10)
    task = client.get(enq.id)
    assert task.attempt == 2 and task.errors[-1].message == "lease expired"
    second.kill()
    second.wait()


def test_sigterm_lets_running_tasks_finish_and_releases_the_rest(
    server: Server,
    client: Client,
    queue: str,
    spawn: Callable[..., tuple[subprocess.Popen[bytes], Path]],
) -> None:
    quick = client.enqueue(queue, {"seconds": 1}, priority=-2).id
    stuck = client.enqueue(queue, {"seconds": 60}, priority=-1).id
    unstarted = [e.id for e in client.enqueue_many(queue, [TaskSpec({"seconds": 0})] * 3)]
    proc, out = spawn(server.url, queue, "sleep", "--concurrency", "2", "--grace", "2")
    wait_for(lambda: {f"start {quick}", f"start {stuck}"} <= set(lines(out)))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    log = lines(out)
    assert f"done {quick}" in log and "exited" in log
    with pytest.raises(NotFound):
        client.get(quick)
    released = client.get(stuck)
    assert released.state == "ready" and released.attempt == 0
    for task_id in unstarted:
        t = client.get(task_id)
        assert t.state == "ready" and t.attempt == 0


def test_ten_thousand_tasks_through_four_processes_each_run_once(
    server: Server,
    client: Client,
    queue: str,
    spawn: Callable[..., tuple[subprocess.Popen[bytes], Path]],
) -> None:
    ids: list[int] = []
    for start in range(0, 10_000, 2_000):
        batch = [TaskSpec({"i": i}) for i in range(start, start + 2_000)]
        ids += [e.id for e in client.enqueue_many(queue, batch)]
    workers = [spawn(server.url, queue, "record", "--concurrency", "16") for _ in range(4)]

    def drained() -> bool:
        return sum(len(lines(out)) - 1 for _, out in workers) >= len(ids)

    wait_for(drained, limit=240)
    for proc, _ in workers:
        proc.send_signal(signal.SIGTERM)
    for proc, _ in workers:
        assert proc.wait(30) == 0
    ran = [int(line) for _, out in workers for line in lines(out) if line.isdigit()]
    assert len(ran) == len(ids) and sorted(ran) == sorted(ids)
    assert all(any(line.isdigit() for line in lines(out)) for _, out in workers)
    assert client.tasks(queue).tasks == []
