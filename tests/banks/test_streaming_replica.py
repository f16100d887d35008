"""Recall against a real streaming standby of the test's own server.

A second PostgreSQL (the embedded wheel's programs) is cloned from the primary with
``pg_basebackup -R`` and started as a hot standby streaming the primary's WAL; it is then the
``replica`` alias. Which database answered is read from the statements each connection ran, and the
standby is held back by pausing its replay (never by waiting): no assertion depends on timing, and
every wait for replay is for a WAL position, bounded.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.core.signals import request_started
from django.db import DEFAULT_DB_ALIAS, connection, connections, reset_queries
from django.utils import timezone

from memoryhub import replica
from memoryhub.embedded import postgres_bin_dir
from memoryhub.replica import REPLICA_ALIAS
from tests.prepared_texts import ran

# The statements a request sent are read by their text, also those run by a prepared name.
pytestmark = pytest.mark.usefixtures("prepared_texts")

WAIT_SECONDS = 180  # a bound on waits for the standby, never an expectation of speed
FERRY = "The harbour ferry leaves at seven from pier four."
LATE = "The late ferry to the island leaves at eleven."


def _system_user() -> str | None:
    return "embedded_postgres" if os.name == "posix" and os.geteuid() == 0 else None


def _run(program: str, *args: str) -> None:
    subprocess.run([str(postgres_bin_dir() / program), *args], check=True, user=_system_user(),
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=WAIT_SECONDS)


def _primary_params() -> dict[str, Any]:
    params = connection.get_connection_params()
    return {k: params[k] for k in ("host", "port", "user", "password") if params.get(k)}


def _wait(check: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"the standby did not {what} within {WAIT_SECONDS} s")
        time.sleep(0.05)


class Standby:
    def __init__(self, data_dir: Path, params: dict[str, Any]) -> None:
        self.data_dir = data_dir
        self.params = params

    def sql(self, statement: str, *args: Any) -> Any:
        with psycopg.connect(dbname="postgres", autocommit=True, connect_timeout=5, **self.params) as conn:
            return conn.execute(statement, args or None).fetchone()

    def wait_for_replay(self) -> Any:
        """Until the standby has replayed everything the primary has written so far (that position, returned)."""
        with psycopg.connect(dbname="postgres", autocommit=True, **_primary_params()) as primary:
            target = primary.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]  # type: ignore[index]
        _wait(lambda: self.sql("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", target)[0], "replay the primary")
        return target

    def pause(self) -> None:
        self.sql("SELECT pg_wal_replay_pause()")
        _wait(lambda: self.sql("SELECT pg_get_wal_replay_pause_state()")[0] == "paused", "pause its replay")

    def wait_for_receipt(self) -> None:
        """Until the (paused) standby has received everything the primary has written so far."""
        with psycopg.connect(dbname="postgres", autocommit=True, **_primary_params()) as primary:
            target = primary.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]  # type: ignore[index]
        _wait(lambda: self.sql("SELECT pg_last_wal_receive_lsn() >= %s::pg_lsn", target)[0], "receive the primary")

    def alive(self) -> bool:
        return (self.data_dir / "postmaster.pid").exists()

    def resume(self) -> None:
        if self.alive():
            self.sql("SELECT pg_wal_replay_resume()")

    def stop(self) -> None:
        if self.alive():
            _run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")


@pytest.fixture(scope="module")
def standby(django_db_setup: None, django_db_blocker: Any) -> Iterator[Standby]:
    """A streaming standby of the test server, registered as the ``replica`` alias for the module."""
    # Short, beside the test server's own data (so the server's system user can reach it), and short
    # enough to hold the standby's socket too.
    data_dir = Path(settings.VAR_DIR) / "servers" / f"standby-{uuid.uuid4().hex[:8]}"
    data_dir.mkdir(parents=True, mode=0o700)
    owner = _system_user()
    if owner:
        shutil.chown(data_dir, owner)
    primary = _primary_params()
    node = Standby(data_dir, {**primary, "host": str(data_dir), "port": primary.get("port") or 5432})
    try:
        where = ["-h", str(primary["host"]), "-U", str(primary["user"])]
        if primary.get("port"):
            where += ["-p", str(primary["port"])]
        # -R writes standby.signal and primary_conninfo; -X stream carries the WAL written meanwhile.
        _run("pg_basebackup", "-D", str(data_dir), "-R", "-X", "stream", "-c", "fast", *where)
        # The primary's socket lives in its data directory: the copy of its lock file is not ours.
        for stale in (*data_dir.glob(".s.PGSQL.*"), data_dir / ".handle_pids.json"):
            stale.unlink(missing_ok=True)
        # The primary's tuning (a quarter of the machine as shared buffers) is not the standby's to copy.
        try:
            _run("pg_ctl", "-D", str(data_dir), "-w", "-t", str(WAIT_SECONDS), "-l", str(data_dir / "standby.log"),
                 "-o", f"-h '' -k {data_dir} -c shared_buffers=64MB -c hot_standby=on", "start")
        except subprocess.CalledProcessError as exc:
            log = data_dir / "standby.log"
            pytest.fail(f"the standby did not start: {exc.stderr!r}\n{log.read_text() if log.exists() else ''}")
        assert node.sql("SELECT pg_is_in_recovery()")[0] is True
        node.wait_for_replay()

        alias = copy.deepcopy(connection.settings_dict)
        alias["HOST"] = str(data_dir)
        if "host" in alias.get("OPTIONS", {}):
            alias["OPTIONS"]["host"] = str(data_dir)
        # A mirror for the test machinery: never flushed (a standby is read-only), only read.
        alias["TEST"] = {**alias.get("TEST", {}), "MIRROR": DEFAULT_DB_ALIAS}
        connections.settings[REPLICA_ALIAS] = alias
        yield node
    finally:
        with django_db_blocker.unblock():
            if REPLICA_ALIAS in connections.settings:
                connections[REPLICA_ALIAS].close()
                del connections[REPLICA_ALIAS]
                connections.settings.pop(REPLICA_ALIAS, None)
        node.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
        replica._replica_down_until = 0.0
        replica._position = None


@pytest.fixture
def fresh(standby: Standby, settings: Any) -> Iterator[Standby]:
    """The standby caught up and measured anew at every read (no cached position), within any bound."""
    settings.MEMORYHUB_REPLICA_CHECK_SECONDS = 0.0
    settings.MEMORYHUB_REPLICA_MAX_LAG = 3600.0
    replica._position = None
    replica._replica_down_until = 0.0
    standby.resume()
    standby.wait_for_replay()
    yield standby
    standby.resume()
    replica._position = None
    replica._replica_down_until = 0.0


@contextmanager
def _statements(alias: str) -> Iterator[list[str]]:
    """The statements ``alias`` runs in the block (without connecting to it, as CaptureQueriesContext
    would: the standby may be dead)."""
    conn = connections[alias]
    conn.force_debug_cursor, before = True, len(conn.queries_log)
    request_started.disconnect(reset_queries)  # each request would empty the log
    ran: list[str] = []
    try:
        yield ran
    finally:
        request_started.connect(reset_queries)
        conn.force_debug_cursor = False
        ran.extend(q["sql"] for q in list(conn.queries_log)[before:])


def _recall(api: Any, bank_id: str = "user-alice") -> tuple[list[str], list[str], list[str]]:
    """The hits' texts, and the statements each database ran for the recall."""
    with _statements(DEFAULT_DB_ALIAS) as on_primary, _statements(REPLICA_ALIAS) as on_replica:
        response = api.post("/v1/recall", {"query": "When does the ferry leave?", "bank_id": bank_id})
    assert response.status_code == 200, response.content
    return [hit["text"] for hit in response.json()["hits"]], on_primary, on_replica


def _reads_memories(statements: list[str]) -> bool:
    """A plain read of memories: not a write that starts with a CTE (the recall marks pick their rows in
    one, FOR UPDATE), which belongs on the primary."""
    statements = ran(statements)
    return any("banks_memory" in sql and sql.lstrip().upper().startswith(("SELECT", "WITH"))
               and not re.search(r"\b(INSERT|UPDATE|DELETE)\b", sql, re.IGNORECASE) for sql in statements)


def _retain(api: Any, text: str, bank_id: str = "user-alice") -> None:
    response = api.post("/v1/retain", {"content": text, "bank_id": bank_id})
    assert response.status_code in (200, 201), response.content


DATABASES = [DEFAULT_DB_ALIAS, REPLICA_ALIAS]


@pytest.mark.django_db(transaction=True, databases=DATABASES)
def test_recall_history_and_graph_read_the_standby(fresh, make_bank, make_token):
    from tests.conftest import ApiClient

    make_bank("user-alice")
    api = ApiClient(make_token())
    _retain(api, FERRY)
    fresh.wait_for_replay()

    texts, primary, standby = _recall(api)
    assert texts == [FERRY]
    assert _reads_memories(standby) and not _reads_memories(primary)

    with _statements(REPLICA_ALIAS) as on_replica:
        history = api.post("/v1/history", {"query": "ferry", "bank_id": "user-alice",
                                           "as_of": timezone.now().isoformat()})
        graph = api.post("/v1/graph/search", {"query": "harbour", "bank_id": "user-alice"})
    assert history.status_code == 200, history.content
    assert graph.status_code == 200, graph.content
    assert [hit["text"] for hit in history.json()["hits"]] == [FERRY]
    assert any("banks_entity" in sql for sql in on_replica)
    assert _reads_memories(on_replica)


@pytest.mark.django_db(transaction=True, databases=DATABASES)
def test_a_retain_is_recalled_from_the_primary_until_the_standby_replays_it(fresh, make_bank, make_token):
    from tests.conftest import ApiClient

    make_bank("user-alice")
    make_bank("user-bob")
    api = ApiClient(make_token({"user-alice": ["read", "write"], "user-bob": ["read", "write"]}))
    _retain(api, FERRY)
    _retain(api, FERRY, bank_id="user-bob")
    fresh.wait_for_replay()
    fresh.pause()

    _retain(api, LATE)  # on the primary; the standby receives it but does not replay it
    fresh.wait_for_receipt()
    assert fresh.sql("SELECT count(*) FROM pg_stat_activity")  # the standby answers, only behind

    # Alice's own write is read back: her recall goes to the primary.
    texts, primary, standby = _recall(api)
    assert LATE in texts
    assert _reads_memories(primary) and not _reads_memories(standby)
    # Bob wrote nothing since: his recall still reads the standby.
    texts, primary, standby = _recall(api, "user-bob")
    assert texts == [FERRY]
    assert _reads_memories(standby) and not _reads_memories(primary)

    fresh.resume()
    fresh.wait_for_replay()
    texts, primary, standby = _recall(api)
    assert LATE in texts
    assert _reads_memories(standby) and not _reads_memories(primary)


@pytest.mark.django_db(transaction=True, databases=DATABASES)
def test_a_standby_beyond_the_lag_bound_is_not_read(fresh, make_bank, make_token, settings):
    from tests.conftest import ApiClient

    make_bank("user-alice")
    make_bank("user-bob")
    api = ApiClient(make_token({"user-alice": ["read", "write"], "user-bob": ["read", "write"]}))
    _retain(api, FERRY)
    fresh.wait_for_replay()
    fresh.pause()
    _retain(api, LATE, bank_id="user-bob")  # another bank's write: Alice's own position is replayed
    fresh.wait_for_receipt()

    # Received but not replayed: the standby is behind by the age of its last replayed commit.
    position = replica.replica_position(fresh=True)
    assert position.standby and position.lag_seconds > 0
    settings.MEMORYHUB_REPLICA_MAX_LAG = 0.0
    texts, primary, standby = _recall(api)
    assert texts == [FERRY]
    assert _reads_memories(primary) and not _reads_memories(standby)

    settings.MEMORYHUB_REPLICA_MAX_LAG = 3600.0
    texts, primary, standby = _recall(api)
    assert texts == [FERRY]
    assert _reads_memories(standby) and not _reads_memories(primary)


@pytest.mark.django_db(transaction=True, databases=DATABASES)
def test_a_standby_caught_up_with_an_idle_primary_is_not_lagging(fresh, make_bank):
    """However old the last replayed commit, a standby that has replayed all it received is current.

    The standby follows the whole server, which other test runs (xdist's other worker, a parallel
    session) may be writing to: a measure taken while their WAL was arriving is not of an idle
    primary, and is taken again. One taken while nothing new arrived must say 0."""
    make_bank("user-alice")
    for _ in range(50):
        target = fresh.wait_for_replay()
        position = replica.replica_position(fresh=True)
        (received,) = fresh.sql("SELECT pg_last_wal_receive_lsn() - %s::pg_lsn", target)
        if received == 0:
            break  # nothing arrived since the replay was waited for: the primary was idle throughout
    else:
        pytest.skip("the server's other databases never stopped writing for the length of one measure")
    assert position.standby and position.lag_seconds == 0


# Last in the module: it kills the standby.
@pytest.mark.django_db(transaction=True, databases=DATABASES)
def test_the_standby_dying_never_fails_a_request(fresh, make_bank, make_token, settings, caplog):
    from tests.conftest import ApiClient

    make_bank("user-alice")
    api = ApiClient(make_token())
    _retain(api, FERRY)
    fresh.wait_for_replay()
    texts, _, standby = _recall(api)
    assert texts == [FERRY] and _reads_memories(standby)  # the connection to the standby is open

    # Measured as current just before it dies: the recall itself meets the dead standby.
    replica.replica_position(fresh=True)
    settings.MEMORYHUB_REPLICA_CHECK_SECONDS = 3600.0
    fresh.stop()
    texts, primary, _ = _recall(api)
    assert texts == [FERRY] and _reads_memories(primary)
    assert "read replica unreachable" in caplog.text
    assert not replica.replica_in_use()

    # Tried again later, still dead: the position check meets it first, and the primary answers.
    replica._replica_down_until = 0.0
    settings.MEMORYHUB_REPLICA_CHECK_SECONDS = 0.0
    texts, primary, _ = _recall(api)
    assert texts == [FERRY] and _reads_memories(primary)
    assert not replica.replica_in_use()
