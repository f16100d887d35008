"""The statement-routing check's own rule (tests/bank_routing.py), on statement texts."""

from __future__ import annotations

import pytest

from tests.bank_routing import MODE_VARIABLE, mode, pins_one_bank, shape

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
