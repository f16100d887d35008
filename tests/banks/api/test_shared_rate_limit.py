"""Rate limits hold across web processes and threads, and count every request exactly once.

Each process below is a separate interpreter with its own database (or Redis) connections, as
gunicorn's workers are; inside each, several threads ask at the same moment. However the requests
interleave, a token allowed N per window gets exactly N through and every other request is refused.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from banks.models import RateCounter
from banks.services.rate_limits import rate_count
from tests.worker import REPO, _database_url

REDIS = "redis://127.0.0.1:6379/14"

# argv: token, requests per thread, threads, start time (epoch seconds), rate
COUNT = """
import sys, threading, time, django
django.setup()
from types import SimpleNamespace
from django.db import connection
from banks.api.throttling import TokenRateThrottle
token, per_thread, threads, start, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
TokenRateThrottle.THROTTLE_RATES = {"token": rate}
request = SimpleNamespace(auth=SimpleNamespace(pk=token))
answers = []
barrier = threading.Barrier(threads)

failures = []

def ask():
    barrier.wait()
    try:
        for _ in range(per_thread):
            answers.append("allowed" if TokenRateThrottle().allow_request(request, None) else "refused")
    except BaseException as exc:
        failures.append(repr(exc))
        raise
    finally:
        connection.close()

workers = [threading.Thread(target=ask) for _ in range(threads)]
# Every process starts asking at the same moment (synchronisation only, nothing is timed).
time.sleep(max(0.0, start - time.time()))
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
if failures:
    sys.exit("failed: " + "; ".join(failures))
print(" ".join(answers))
"""


def _env(cache_url: str | None) -> dict[str, str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
           "MEMORYHUB_EMBEDDED_DATABASE_URL": _database_url(), "SECRET_KEY": settings.SECRET_KEY,
           "MEMORYHUB_VAR_DIR": str(settings.VAR_DIR)}
    env.pop("MEMORYHUB_CACHE_URL", None)
    if cache_url:
        env["MEMORYHUB_CACHE_URL"] = cache_url
    return env


def ask_from_processes(token: str, *, processes: int, threads: int, per_thread: int, rate: str,
                       cache_url: str | None) -> list[str]:
    start = time.time() + 4  # time for every interpreter to import Django before the first request
    running = [subprocess.Popen([sys.executable, "-c", COUNT, token, str(per_thread), str(threads), str(start), rate],
                                cwd=REPO, env=_env(cache_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True) for _ in range(processes)]
    answers = []
    for process in running:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, err[-3000:]
        answers += out.split()
    return answers


@pytest.mark.parametrize("cache_url", [None, REDIS], ids=["database", "redis"])
def test_two_processes_share_one_tokens_count(transactional_db, cache_url):
    token = f"shared-{uuid.uuid4().hex}"  # a fresh identity: no count left over from another test
    ask = dict(processes=1, threads=1, rate="3/min", cache_url=cache_url)
    assert ask_from_processes(token, per_thread=2, **ask) == ["allowed", "allowed"]
    assert ask_from_processes(token, per_thread=2, **ask) == ["allowed", "refused"]


@pytest.mark.parametrize("cache_url", [None, REDIS], ids=["database", "redis"])
def test_concurrent_requests_over_the_limit_get_exactly_the_expected_refusals(transactional_db, cache_url):
    """3 processes x 8 threads x 5 requests = 120 at once on a limit of 50: exactly 50 allowed, 70 refused.
    (The count it replaced read, then wrote: two requests reading together both got through.)"""
    token = f"burst-{uuid.uuid4().hex}"
    answers = ask_from_processes(token, processes=3, threads=8, per_thread=5, rate="50/hour", cache_url=cache_url)
    assert len(answers) == 120
    assert answers.count("allowed") == 50 and answers.count("refused") == 70


def test_a_window_that_ended_starts_again_from_one(db):
    key = f"throttle_token_{uuid.uuid4().hex}"
    assert [rate_count(key=key, period=60).count for _ in range(3)] == [1, 2, 3]  # type: ignore[union-attr]
    counted = rate_count(key=key, period=60)
    assert counted is not None and counted.count == 4 and 0 < counted.resets_in <= 60
    RateCounter.objects.filter(key=key).update(started=timezone.now() - timedelta(seconds=120))
    again = rate_count(key=key, period=60)
    assert again is not None and again.count == 1 and again.resets_in > 59


def test_an_unreachable_redis_lets_requests_through(settings):
    settings.MEMORYHUB_CACHE_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    assert rate_count(key=f"throttle_token_{uuid.uuid4().hex}", period=60) is None


@pytest.mark.django_db(transaction=True)  # the backend's WAL figures are written out only between transactions
def test_counting_a_request_writes_nothing_to_the_write_ahead_log():
    """The counter table is unlogged: counting is a commit that waits for no disk flush.

    Measured on this connection's own WAL figures: the server's WAL position also moves with every other
    database's writes (a second test run on the same server wrote 1,912 bytes during one count)."""
    from django.db import connection

    if connection.pg_version < 180000:
        pytest.skip("a backend's own WAL figures (pg_stat_get_backend_wal) need PostgreSQL 18")

    def wal_bytes_written(cursor: Any) -> int:
        cursor.execute("SELECT pg_stat_force_next_flush()")  # the backend writes its figures out once idle
        cursor.execute("SELECT wal_bytes FROM pg_stat_get_backend_wal(pg_backend_pid())")
        return int(cursor.fetchone()[0])

    with connection.cursor() as cursor:
        cursor.execute("SELECT relpersistence FROM pg_class WHERE relname = %s", [RateCounter._meta.db_table])
        assert cursor.fetchone()[0] == "u"
        # A first count may also prune a page it reads on the way (a 60-byte PRUNE_ON_ACCESS record): not measured.
        rate_count(key=f"throttle_token_{uuid.uuid4().hex}", period=60)
        before = wal_bytes_written(cursor)
        rate_count(key=f"throttle_token_{uuid.uuid4().hex}", period=60)
        written = wal_bytes_written(cursor) - before
    # Only the commit record (tens of bytes); a logged insert of the row and its index entry is more.
    assert 0 < written < 100
