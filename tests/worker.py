"""A real Celery worker process on the local Redis, for tests about background work.

The worker runs the normal settings against this test run's database (the rows a
test commits are what it sees, so such tests use ``transactional_db``) and
listens on a queue of its own, so parallel test runs never take each other's tasks.
It runs the statement-routing check on its own connections (tests/routed_worker.py):
what it finds fails the test that started it, as the test's own statements would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from config.celery import app as celery_app
from tests.bank_routing import WORKER_LOG_VARIABLE, worker_log
from tests.db_sessions import sessions_on_the_test_database
from tests.live_process import wait_until

REPO = Path(__file__).resolve().parent.parent


# A killed worker's backends outlive it until they next read from its socket: one running the worker's
# last statement (a batch's COMMIT, say) finishes it first, so a test reading the database right after
# the kill can see the state before that commit, and the state after it a moment later.
BACKENDS_END_SECONDS = 30


@dataclass
class WorkerProcess:
    process: subprocess.Popen[bytes]
    queue: str
    log: Path
    # The application_name of the worker's database sessions (PGAPPNAME): how its backends are found.
    session_name: str

    def kill(self, *, wait_for_sessions: bool = True) -> None:
        """SIGKILL, as a crash or an OOM kill would: no chance to clean up. Returns once the worker's
        database sessions have ended too (``sessions_ended``), so what its last statement committed is
        committed; ``wait_for_sessions=False`` where the test itself holds a lock one of them waits on."""
        self.process.kill()
        self.process.wait(timeout=30)
        if wait_for_sessions:
            self.sessions_ended()

    def sessions_ended(self) -> None:
        """Wait until none of the worker's database sessions is left."""
        wait_for(lambda: all(name != self.session_name for _, name, _, _ in sessions_on_the_test_database()),
                 timeout=BACKENDS_END_SECONDS, interval=0.05)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def _database_url() -> str:
    base = settings.MEMORYHUB_DATABASE_URL
    name = connection.settings_dict["NAME"]
    # Same server and credentials as this run, but the test database.
    head, _, query = base.partition("?")
    head = head.rsplit("/", 1)[0] + "/" + name
    return head + (f"?{query}" if query else "")


def start_worker(tmp_path: Path, broker: str, *, queue: str | None = None, queues: list[str] | None = None,
                 beat: bool = False, name: str = "worker") -> WorkerProcess:
    """A worker on ``queue`` (a new one unless given) and its sweep queue, or on ``queues`` exactly;
    ``beat`` embeds Celery beat (its periodic tasks sent on ``queue``'s routes)."""
    queue = queue or f"test-{uuid.uuid4().hex[:10]}"
    listen = queues or [queue, f"{queue}-sweep"]
    log = tmp_path / f"{name}-{queue}-{uuid.uuid4().hex[:6]}.log"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "MEMORYHUB_EMBEDDED_DATABASE_URL": _database_url(),
        "SECRET_KEY": settings.SECRET_KEY,
        "CELERY_BROKER_URL": broker,
        "MEMORYHUB_CELERY_QUEUE": queue,
        "MEMORYHUB_VAR_DIR": str(settings.VAR_DIR),
        "MEMORYHUB_PORTABILITY_ROOTS": settings.MEMORYHUB_PORTABILITY_ROOTS or "off",  # none: file access off
        # The worker embeds as the test process does, so vectors written on either side compare.
        "MEMORYHUB_EMBEDDINGS": settings.MEMORYHUB_EMBEDDINGS,
    }
    # Its own name on its database sessions (libpq reads PGAPPNAME), so a kill can wait for them.
    session_name = f"pytest {os.getpid()} worker {uuid.uuid4().hex[:8]}"
    env["PGAPPNAME"] = session_name
    env.pop("MEMORYHUB_CELERY_EAGER", None)
    # The worker's statements go through the routing check too (tests/routed_worker.py).
    routing_log = worker_log(tmp_path)
    env.pop(WORKER_LOG_VARIABLE, None)
    if routing_log is not None:
        env[WORKER_LOG_VARIABLE] = str(routing_log)
    handle = log.open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.routed_worker", "-A", "config", "worker", "--pool", "solo", "--loglevel", "INFO",
         "-Q", ",".join(listen), "-n", f"{name}-{uuid.uuid4().hex[:6]}@%h",
         "--without-heartbeat", "--without-mingle", "--without-gossip",
         *(["-B", "-s", str(tmp_path / f"beat-{queue}")] if beat else [])],
        cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT,
    )
    worker = WorkerProcess(process=process, queue=queue, log=log, session_name=session_name)
    deadline = time.monotonic() + 60
    while "ready." not in worker.output():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"Celery worker did not start:\n{worker.output()[-3000:]}")
        time.sleep(0.2)
    return worker


@pytest.fixture
def celery_worker(transactional_db: None, tmp_path: Path) -> Iterator[WorkerProcess]:
    """Tasks sent during the test go to a real worker process (not run eagerly)."""
    broker = os.environ.get("MEMORYHUB_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
    worker = start_worker(tmp_path, broker)
    conf = celery_app.conf
    saved = (conf.task_always_eager, conf.task_default_queue, conf.broker_url)
    conf.task_always_eager = False
    conf.task_default_queue = worker.queue
    conf.broker_url = broker
    try:
        yield worker
    finally:
        conf.task_always_eager, conf.task_default_queue, conf.broker_url = saved
        if worker.process.poll() is None:
            worker.process.terminate()
            try:
                worker.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.process.kill()


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.2):  # noqa: ANN001, ANN201
    """Poll until ``predicate()`` is truthy; returns its value or fails the test with a message."""
    return wait_until(predicate, timeout, "condition not met", interval=interval)
