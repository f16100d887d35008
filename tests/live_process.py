"""MemoryHub served by real processes (gunicorn for the web, uvicorn for MCP), for fault tests.

A fault test breaks something the server depends on (the broker, PostgreSQL), so the server
must not be this test process: each helper starts a child with its own environment and
stops it at the end.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from django.conf import settings

REPO = Path(__file__).resolve().parent.parent


def pid_running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (a zombie waiting for its parent has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def wait_until(predicate, timeout: float, what: str, log: Path | None = None,  # noqa: ANN001, ANN201
               interval: float = 0.2):
    """Poll ``predicate()`` until it is truthy and return its value; else fail with ``what`` and the
    tail of the process's ``log``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    tail = log.read_text(errors="replace")[-4000:] if log and log.exists() else ""
    pytest.fail(f"{what} within {timeout:.0f} s\n{tail}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    return free_port()


@dataclass
class ServedProcess:
    process: subprocess.Popen[bytes]
    url: str
    log: Path
    probe: str

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_until_serving(self, timeout: float = 90) -> ServedProcess:
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server did not start:\n{self.output()[-3000:]}")
            try:
                httpx.get(self.url + self.probe, timeout=2)
                return self
            except httpx.TransportError:
                time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def server_env(database_url: str, **overrides: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "MEMORYHUB_EMBEDDED_DATABASE_URL": database_url,
        "SECRET_KEY": settings.SECRET_KEY,
        "MEMORYHUB_VAR_DIR": str(settings.VAR_DIR),
        "MEMORYHUB_EMBEDDINGS": "hashing",
        "MEMORYHUB_RATE_LIMIT": "100000/min",
        **overrides,
    }
    env.pop("MEMORYHUB_CELERY_EAGER", None)
    return env


def _start(command: list[str], env: dict[str, str], log: Path, url: str, probe: str) -> ServedProcess:
    with log.open("wb") as handle:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT)
    return ServedProcess(process=process, url=url, log=log, probe=probe)


def start_web(tmp_path: Path, env: dict[str, str]) -> ServedProcess:
    """gunicorn serving config.wsgi on a free local port (call ``wait_until_serving``, then ``stop``)."""
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
               "--workers", "1", "--timeout", "60", "--graceful-timeout", "5"]
    return _start(command, env, tmp_path / f"web-{port}.log", f"http://127.0.0.1:{port}", "/live")


def start_mcp(tmp_path: Path, env: dict[str, str]) -> ServedProcess:
    """``manage.py serve_mcp`` on a free local port; its endpoint is ``url + "/mcp"``."""
    port = free_port()
    command = [sys.executable, "manage.py", "serve_mcp", "--addr", f"127.0.0.1:{port}"]
    return _start(command, env, tmp_path / f"mcp-{port}.log", f"http://127.0.0.1:{port}", "/mcp")


@contextmanager
def serving(*servers: ServedProcess) -> Iterator[tuple[ServedProcess, ...]]:
    """Wait for every server (they start side by side), stop them all at the end."""
    try:
        for server in servers:
            server.wait_until_serving()
        yield servers
    finally:
        for server in servers:
            server.stop()


def start_asgi(tmp_path: Path, env: dict[str, str]) -> ServedProcess:
    """uvicorn serving config.asgi on a free local port (call ``wait_until_serving``, then ``stop``)."""
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port),
               "--log-level", "warning"]
    return _start(command, env, tmp_path / f"asgi-{port}.log", f"http://127.0.0.1:{port}", "/live")
