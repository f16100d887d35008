"""Fault tests for `manage.py serve`: children killed with SIGKILL come back, PostgreSQL too, and a
SIGTERM still stops everything. Real processes, bounded waits."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import psycopg
import pytest
from django.conf import settings

from config.supervisor import Backoff, CallbackService, Supervisor
from memoryhub.embedded import (
    embedded_database_pid,
    embedded_database_url,
    release_embedded_database,
    restart_embedded_database,
)
from tests.live_process import pid_running, wait_until
from tests.worker import REPO, _database_url

STARTED = re.compile(r"(\w+) started \(pid (\d+)\)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def started(log: Path) -> list[tuple[str, int]]:
    return [(name, int(pid)) for name, pid in STARTED.findall(log.read_text(errors="replace"))]


def health(addr: str) -> int:
    try:
        return httpx.get(f"http://{addr}/health", timeout=5).status_code
    except httpx.HTTPError:
        return 0


@pytest.mark.usefixtures("transactional_db")
def test_killed_web_and_worker_come_back_and_sigterm_stops_everything(tmp_path):
    addr, mcp_addr = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    log = tmp_path / "serve.log"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        # The test run's database on the test run's server: this serve supervises no PostgreSQL.
        "MEMORYHUB_EMBEDDED_DATABASE_URL": _database_url(),
        "MEMORYHUB_VAR_DIR": str(tmp_path / "var"),
        "SECRET_KEY": settings.SECRET_KEY,
        "MEMORYHUB_EMBEDDINGS": "hashing",
        "MEMORYHUB_ADDR": addr, "MEMORYHUB_MCP_ADDR": mcp_addr,
        "MEMORYHUB_WEB_WORKERS": "1", "MEMORYHUB_WEB_THREADS": "1", "MEMORYHUB_WORKER_CONCURRENCY": "1",
        "MEMORYHUB_RESTART_DELAY": "0.5",
        # No roots: the system checks have a warning to print, and it must be printed once, not per child.
        "MEMORYHUB_PORTABILITY_ROOTS": "off",
    }
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "ASTROCYTE_PORTABILITY_ROOTS", "MEMORYHUB_CACHE_URL",
                 "MEMORYHUB_DEV", "MEMORYHUB_CELERY_EAGER"):
        env.pop(name, None)
    with log.open("wb") as out:
        serve = subprocess.Popen([sys.executable, "manage.py", "serve"], cwd=REPO, env=env, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: health(addr) == 200, 120, "the web server did not answer", log)
        wait_until(lambda: log.read_text(errors="replace").count(" ready.") >= 1, 60, "the worker was not ready", log)
        first = dict(started(log))
        assert set(first) == {"worker", "sweeper", "beat", "mcp", "web", "front"}
        assert log.read_text(errors="replace").count("(portability.W001)") == 1

        os.kill(first["web"], signal.SIGKILL)
        os.kill(first["worker"], signal.SIGKILL)

        def restarted() -> dict[str, int]:
            later = [(n, p) for n, p in started(log) if n in {"web", "worker"} and p != first[n]]
            return dict(later) if len(later) == 2 else {}

        again = wait_until(restarted, 60, "web and worker were not started again", log)
        text = log.read_text(errors="replace")
        assert "web was killed by SIGKILL (crash 1 in a row)" in text
        assert "worker was killed by SIGKILL (crash 1 in a row)" in text
        wait_until(lambda: health(addr) == 200, 60, "the restarted web server did not answer", log)
        wait_until(lambda: log.read_text(errors="replace").count(" ready.") >= 2, 60,
                   "the restarted worker was not ready", log)
        # The job sweep runs on the sweep's own worker, beat sending it to its own queue.
        wait_until(lambda: re.search(r"Task portability\.sweep_jobs\[[^\]]+\] succeeded",
                                     log.read_text(errors="replace")), 90, "the job sweep did not run", log)
        # Untouched by the others' crashes; the front answers for the restarted gunicorn behind it.
        assert all(pid_running(first[name]) for name in ("beat", "mcp", "front", "sweeper"))

        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=90) == 0
        text = log.read_text(errors="replace")
        assert "MemoryHub stopped." in text
        for pid in [*again.values(), first["beat"], first["mcp"], first["front"], first["sweeper"]]:
            wait_until(lambda pid=pid: not pid_running(pid), 10, f"pid {pid} outlived serve", log)
        assert health(addr) == 0
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait(timeout=30)


def test_a_killed_embedded_postgresql_is_started_again(server_dir):
    data_dir = server_dir / "pg"
    url = embedded_database_url(data_dir)
    try:
        service = CallbackService("postgresql", start=lambda: restart_embedded_database(data_dir),
                                  alive=lambda: embedded_database_pid(data_dir) is not None,
                                  pid=lambda: embedded_database_pid(data_dir))
        supervisor = Supervisor([service], backoff=Backoff(initial=0.5, maximum=2.0))
        supervisor.start_all()
        first = embedded_database_pid(data_dir)
        assert first is not None
        with psycopg.connect(url) as conn:
            conn.execute("CREATE TABLE kept (n int)")
            conn.execute("INSERT INTO kept VALUES (1), (2)")

        os.kill(first, signal.SIGKILL)

        def back() -> int | None:
            supervisor.tick()
            pid = embedded_database_pid(data_dir)
            return pid if pid and pid != first else None

        wait_until(back, 90, "PostgreSQL was not started again")
        assert supervisor.crashes("postgresql") >= 1
        # Same socket, same data: a client's URL keeps working.
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*) FROM kept").fetchone() == (2,)
    finally:
        release_embedded_database(data_dir)
    assert embedded_database_pid(data_dir) is None
