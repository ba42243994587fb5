"""`prover serve` in its own process, as a user starts it, for the tests that talk to it."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(args: list[str], cwd: Path, env: dict, log: Path, timeout_s: float = 90) -> Iterator[tuple[str, dict]]:
    """`prover serve ARGS --port FREE` until /health answers: yields its URL and that answer;
    stopped after. A process that exits, or a wait past timeout_s, fails with its log."""
    port = free_port()
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "prover.cli", *args, "--port", str(port)], cwd=cwd,
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                health = httpx.get(f"{url}/health", timeout=5).json()
                break
            except httpx.HTTPError:
                assert proc.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.3)
        yield url, health
    finally:
        proc.terminate()
        proc.wait(30)
