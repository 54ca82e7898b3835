"""The READMEs' ten-line examples, run as written against a real server.

The package README's producer and worker and the top README's "From Python"
snippet are read from the Markdown itself, so a change that breaks them (or a
README that drifts from the API) fails here. Only the server's address is
replaced: the suite's server listens on a free port, not on 7700.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from conftest import REPO, Server, wait_for

DEFAULT_URL = "http://127.0.0.1:7700"


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, re.S)


def package_readme() -> list[str]:
    return python_blocks((REPO / "clients" / "python" / "README.md").read_text())


def top_readme() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## From Python / From Node") :]
    return python_blocks(section[: section.index("\n## ", 1)])[0]


def start(code: str, server: Server, out: Path) -> subprocess.Popen[bytes]:
    assert DEFAULT_URL in code
    script = out.with_suffix(".py")
    script.write_text(code.replace(DEFAULT_URL, server.url))
    # Unbuffered, so that what a worker prints reaches the file while it runs.
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with out.open("wb") as sink:
        return subprocess.Popen([sys.executable, str(script)], stdout=sink, stderr=sink, env=env)


def run(code: str, server: Server, out: Path) -> str:
    proc = start(code, server, out)
    assert proc.wait(30) == 0, out.read_text()
    return out.read_text()


def stop(proc: subprocess.Popen[bytes], sig: signal.Signals, out: Path) -> None:
    proc.send_signal(sig)
    assert proc.wait(30) == 0, out.read_text()


def test_the_ten_line_producer_and_worker(server: Server, tmp_path: Path) -> None:
    producer, consumer = package_readme()[:2]
    first = run(producer, server, tmp_path / "produce-1")
    task_id, duplicate = first.split()
    assert task_id.isdigit() and duplicate == "False"
    # The idempotency key: the same task, reported as a duplicate.
    assert run(producer, server, tmp_path / "produce-2").split() == [task_id, "True"]
    out = tmp_path / "consume"
    worker = start(consumer, server, out)
    wait_for(lambda: "sending to ada@example.com, attempt 1" in out.read_text())
    stop(worker, signal.SIGTERM, out)


def test_the_top_readme_snippet(server: Server, tmp_path: Path) -> None:
    out = tmp_path / "top"
    proc = start(top_readme(), server, out)
    wait_for(lambda: "sending to ada@example.com" in out.read_text())
    stop(proc, signal.SIGINT, out)
