"""The statement-routing check (tests/bank_routing.py): its rule on statement texts, and what it sees (every
thread's connections, a real worker's statements)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.bank_routing import MODE_VARIABLE, ROOT, RoutingCheck, mode, pins_one_bank, shape, unpinned_tables

TABLES = frozenset({"banks_memory", "banks_entity", "banks_memoryentity"})


@pytest.mark.parametrize("sql", [
    'SELECT "banks_memory"."id" FROM "banks_memory" WHERE "banks_memory"."bank_id" = %s LIMIT 21',
    "SELECT id FROM banks_memory WHERE bank_id = 42 AND NOT own_vector_index",
    'INSERT INTO "banks_memory" ("bank_id", "memory_id", "text") VALUES (%s, %s, %s)',
    "SELECT m.id FROM banks_memory m JOIN banks_memoryentity me ON me.bank_id = m.bank_id WHERE m.bank_id = %s",
    'SELECT "banks_bank"."id" FROM "banks_bank" WHERE "banks_bank"."bank_id" = %s',  # reference table
    'SELECT "banks_auditevent"."id" FROM "banks_auditevent"',  # not a bank table here
    "SAVEPOINT s1",
])
def test_statements_that_name_one_bank_pass(sql):
    assert pins_one_bank(sql, TABLES)


@pytest.mark.parametrize("sql", [
    'DELETE FROM "banks_memory" WHERE "banks_memory"."id" IN (%s, %s)',
    "SELECT id, text FROM banks_memory WHERE id = ANY(%s)",
    'SELECT COUNT(*) AS "__count" FROM "banks_memory"',
    'UPDATE "banks_entity" SET "mention_count" = 0 WHERE "banks_entity"."id" = %s',
    'SELECT "banks_memory"."id" FROM "banks_memory" WHERE "banks_memory"."bank_id" IN (%s, %s)',
])
def test_statements_that_span_banks_are_caught(sql):
    assert not pins_one_bank(sql, TABLES)


@pytest.mark.parametrize("sql", [
    'SELECT "banks_memory"."id" FROM "banks_memory" WHERE "banks_memory"."bank_id" = %s LIMIT 21',
    "SELECT id FROM banks_memory WHERE bank_id = 42",
    "SELECT m.id FROM banks_memory m JOIN banks_memoryentity me ON me.bank_id = m.bank_id AND me.memory_id = m.id "
    "WHERE m.bank_id = %s",
    'SELECT "banks_entity"."id" FROM "banks_entity" INNER JOIN "banks_memoryentity" ON ("banks_entity"."id" = '
    '"banks_memoryentity"."entity_id") WHERE ("banks_entity"."bank_id" = %s AND "banks_memoryentity"."bank_id" = %s)',
    "SELECT m.id FROM banks_memory m WHERE m.bank_id = %s AND EXISTS (SELECT 1 FROM banks_memoryentity "
    "WHERE memory_id = m.id AND bank_id = %s)",
    "WITH picked AS MATERIALIZED (SELECT id FROM banks_memory WHERE bank_id = %s FOR UPDATE SKIP LOCKED) "
    "UPDATE banks_memory m SET last_recalled_at = %s FROM picked WHERE m.bank_id = %s AND m.id = picked.id",
    "SELECT m.id FROM banks_memory AS m WHERE m.bank_id IN (%s)",
])
def test_joins_that_pin_every_bank_table_pass(sql):
    assert pins_one_bank(sql, TABLES) and unpinned_tables(sql, TABLES) == []


@pytest.mark.parametrize(("sql", "unpinned"), [
    # A join pinned on one side only: the other side reads every bank's partition.
    ('SELECT "banks_memoryentity"."id" FROM "banks_memoryentity" INNER JOIN "banks_memory" ON '
     '("banks_memoryentity"."memory_id" = "banks_memory"."id") WHERE "banks_memoryentity"."bank_id" = %s',
     ["banks_memory"]),
    ('SELECT … FROM "banks_memory" LEFT OUTER JOIN "banks_memory" T3 ON ("banks_memory"."merged_into_id" = T3."id") '
     'WHERE "banks_memory"."bank_id" = %s', ["banks_memory"]),
    # A sub-select is pinned in its own scope, not by the statement around it.
    ("SELECT id FROM banks_memory WHERE bank_id = %s AND id IN (SELECT memory_id FROM banks_memoryentity "
     "WHERE entity_id = %s)", ["banks_memoryentity"]),
    ('SELECT U0."id" FROM "banks_memory" U0 WHERE (U0."bank_id" = %s AND NOT (U0."memory_id" IN (SELECT V0."ref" '
     'FROM "banks_entity" V0 WHERE V0."name" = %s)))', ["banks_entity"]),
    # An UPDATE whose own rows are found through a pinned sub-select alone.
    ("UPDATE banks_memory SET last_recalled_at = %s WHERE id IN (SELECT id FROM banks_memory WHERE bank_id = %s)",
     ["banks_memory"]),
    ("DELETE FROM banks_entity WHERE id IN (SELECT id FROM banks_entity WHERE bank_id = %s LIMIT %s)",
     ["banks_entity"]),
])
def test_a_bank_table_left_unpinned_in_a_pinned_statement_is_named(sql, unpinned):
    assert pins_one_bank(sql, TABLES)
    assert unpinned_tables(sql, TABLES) == unpinned


def test_a_statement_shape_hides_its_values():
    assert shape("SELECT a, b FROM banks_memory WHERE text = 'secret'  AND id = 42") == \
        "SELECT … FROM banks_memory WHERE text = ? AND id = ?"


def test_the_check_is_strict_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv(MODE_VARIABLE, raising=False)
    assert mode() == "strict"
    monkeypatch.setenv(MODE_VARIABLE, "report")
    assert mode() == "report"
    monkeypatch.setenv(MODE_VARIABLE, "off")
    assert mode() == "off"


@pytest.mark.parametrize("sql", [
    "SELECT m.text FROM banks_memory m WHERE m.bank_id = %(bank)s AND m.session_key = %(key)s",
])
def test_a_bank_named_as_a_named_parameter_pins_it(sql):
    assert pins_one_bank(sql, TABLES)


# A function that lives, for the check, in an application module: the statements it sends are the
# application's (the check tells the sender by the file of its code), not a test's own look.
_PROBE = compile(
    "def unpinned_read():\n"
    "    from django.db import connection\n"
    "    with connection.cursor() as cursor:\n"
    "        cursor.execute('SELECT id FROM banks_memory WHERE id = ANY(%s)', [[0]])\n",
    str(ROOT / "banks" / "selectors" / "routing_probe.py"), "exec")
_NAMES: dict[str, Any] = {}
exec(_PROBE, _NAMES)  # noqa: S102  (the text above, nothing else)


def _take_findings(check: RoutingCheck) -> list[str]:
    """The probe's findings, taken out of the run's check so the test itself passes."""
    mine = [f for f in check.failures if "routing_probe.py" in f]
    check.failures[:] = [f for f in check.failures if "routing_probe.py" not in f]
    for key in [k for k in check.findings if "routing_probe.py" in k[0]]:
        del check.findings[key]
    return mine


@pytest.fixture
def run_check(request: pytest.FixtureRequest) -> RoutingCheck:
    check: RoutingCheck | None = getattr(request.config, "_bank_routing", None)
    if check is None or not check.strict:
        pytest.skip(f"the check runs in strict mode ({MODE_VARIABLE} says otherwise)")
    return check


@pytest.mark.django_db(transaction=True)
def test_a_statement_sent_from_another_thread_is_checked(run_check):
    worker = threading.Thread(target=_NAMES["unpinned_read"], name="probe-thread")
    worker.start()
    worker.join()
    assert _take_findings(run_check) == [
        "banks/selectors/routing_probe.py:unpinned_read (thread probe-thread): "
        "SELECT … FROM banks_memory WHERE id = ANY(%s)"]


@pytest.mark.django_db(transaction=True)
def test_a_statement_sent_from_recalls_helper_thread_is_checked(run_check):
    from memoryhub.read_beside import read_beside

    future = read_beside(_NAMES["unpinned_read"])
    assert future is not None  # outside a transaction: the helper thread runs it
    future.result(timeout=30)
    assert _take_findings(run_check) == [
        "banks/selectors/routing_probe.py:unpinned_read (thread read-beside): "
        "SELECT … FROM banks_memory WHERE id = ANY(%s)"]


@pytest.mark.django_db
def test_a_workers_findings_count_for_the_test_that_started_it(run_check, tmp_path):
    """A real worker (tests/routed_worker.py) checks in its own process and writes what it finds; the
    test run reads it as the test's own finding (here the worker's side runs in this process)."""
    from django.db import connection

    from tests.bank_routing import _worker_findings, bank_tables, worker_log, wrapper

    log = worker_log(tmp_path)
    assert log is not None
    in_worker = RoutingCheck(strict=False, tables=bank_tables(), active=True, log=log)
    run_check.active = False  # only the worker's side sees the statement
    try:
        with connection.execute_wrapper(wrapper(in_worker)):
            _NAMES["unpinned_read"]()
    finally:
        run_check.active = True
    assert in_worker.findings == {}  # written down for the test run, not kept
    _worker_findings(run_check)
    assert _take_findings(run_check) == [
        "banks/selectors/routing_probe.py:unpinned_read (Celery worker): SELECT … FROM banks_memory WHERE id = ANY(%s)"]


def test_an_xdist_workers_figures_reach_the_controllers_summary():
    """Under pytest-xdist each worker checks its own tests; the controller's summary adds them up."""
    from types import SimpleNamespace

    from tests.bank_routing import merge_worker, worker_finish

    worker = RoutingCheck(strict=False, tables=frozenset({"banks_memory"}))
    worker.current_test = "tests/x.py::test_one"
    worker.found("banks/selectors/x.py:f", "unpinned: SELECT ...")
    worker.allowed["banks/admin/:*"] = 3
    worker_config = SimpleNamespace(_bank_routing=worker, workeroutput={})
    worker_finish(worker_config)  # type: ignore[arg-type]

    controller = RoutingCheck(strict=False, tables=frozenset({"banks_memory"}))
    controller.allowed["banks/admin/:*"] = 1
    merge_worker(SimpleNamespace(_bank_routing=controller), worker_config.workeroutput)  # type: ignore[arg-type]
    assert controller.allowed == {"banks/admin/:*": 4}
    (finding,) = controller.findings.values()
    assert finding.where == "banks/selectors/x.py:f" and finding.tests == {"tests/x.py::test_one"}
