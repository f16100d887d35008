"""Writes and reads by surrogate id or parent id name the bank too (tests/bank_routing.py's rule, applied
here to every statement whatever MEMORYHUB_BANK_ROUTING says): Django's instance methods on bank rows
(banks.models.bank_scoped), the mention counters, erasure and deletion of memory rows, observations'
evidence and mental models' revisions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection

from banks.models import Memory, MemoryEntity, MemoryLink, ObservationEvidence
from banks.selectors.mental_models import revision_get, revision_list
from banks.selectors.observations import observation_list, observation_view
from banks.services.directives import directive_create, directive_update
from banks.services.memory_entities import memory_entity_remove
from banks.services.memory_rows import rows_delete, rows_erase
from banks.services.mental_models import mental_model_create, mental_model_delete, mental_model_revert
from banks.services.observations import observation_create, observation_delete, observation_update
from tests.bank_routing import bank_tables, pins_one_bank, shape
from tests.factories import entity, make_bank, make_link, make_memory, row_invariant_breaks

pytestmark = pytest.mark.django_db


@contextmanager
def pinned() -> Iterator[None]:
    """Every statement sent inside, whoever sends it (the suite's check leaves the tests' own alone)."""
    tables = bank_tables()
    unpinned: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not pins_one_bank(sql, tables):
            unpinned.append(shape(sql))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield
    assert unpinned == []


def test_instance_save_reload_and_delete_name_the_bank():
    bank = make_bank()
    first = make_memory(bank, "Ortega keeps the ferry keys.", entities=["Ortega"])
    second = make_memory(bank, "The ferry leaves at seven.", entities=["Ortega"])
    make_link(first, second)
    observation = observation_create(bank=bank, text="The ferry runs early.", actor="test",
                                     source_ids=[first.memory_id])
    with pinned():
        first.metadata = {"checked": True}
        first.save(update_fields=["metadata"])
        first.refresh_from_db()
        lazy = Memory.objects.only("bank_id", "memory_id").get(bank=bank, pk=second.pk)
        assert lazy.text == "The ferry leaves at seven."  # a deferred field loaded by the bank and the id
        first.delete()  # Django's collector would address the links and evidence by the memory's id alone
    assert first.metadata == {"checked": True}
    assert not MemoryLink.objects.filter(bank=bank).exists()
    assert not MemoryEntity.objects.filter(bank=bank, memory_id=first.pk if first.pk else -1).exists()
    assert list(ObservationEvidence.objects.filter(bank=bank, observation=observation)
                .values_list("memory_id", "memory_ref")) == [(None, first.memory_id)]


def test_memory_rows_and_mention_counters_name_the_bank():
    bank = make_bank()
    other = make_bank("user-bob")
    kept = make_memory(other, "Ortega sails from the other harbour.", entities=["Ortega"])
    one = make_memory(bank, "Ortega met Ines at the harbour.", entities=["Ortega", "Ines"])
    two = make_memory(bank, "Ortega and Ines fixed the ferry.", entities=["Ortega", "Ines"])
    three = make_memory(bank, "Ines paints the ferry blue.", entities=["Ines"])
    with pinned():
        memory_entity_remove(memory=one, entity_id="ines", actor="test")
        rows_erase(bank, [two.memory_id], actor="test")
        rows_delete(bank, [three.pk], actor="test")
    assert entity(bank, "Ortega").mention_count == 1
    assert entity(bank, "Ines").mention_count == 0
    assert entity(other, "Ortega").mention_count == 1 and Memory.objects.filter(pk=kept.pk).exists()
    assert row_invariant_breaks() == {}


def test_observations_and_mental_models_name_the_bank():
    bank = make_bank()
    memory = make_memory(bank, "Alice asked for written status updates.")
    observation = observation_create(bank=bank, text="Prefers async updates.", actor="test",
                                     source_ids=[memory.memory_id, "not-a-memory"])
    model = mental_model_create(bank=bank, model_id="team", title="Team", actor="test", content="# Team\nFirst.")
    directive = directive_create(bank=bank, rule_text="Answer in English.", actor="test")
    with pinned():
        view = observation_view(observation)
        assert view.source_ids == [memory.memory_id, "not-a-memory"] and view.unresolved_ids == ["not-a-memory"]
        assert [v.observation.pk for v in observation_list(bank=bank)] == [observation.pk]
        observation_update(observation=observation, actor="test", confidence=0.6,
                           remove_source_ids=["not-a-memory"])
        assert observation_delete(observation=observation, actor="test")
        assert [r.number for r in revision_list(model=model)] == [1]
        assert revision_get(model=model, number=1).number == 1
        mental_model_revert(model=model, to_revision=1, actor="test")
        assert mental_model_delete(model=model, actor="test")
        directive_update(directive=directive, actor="test", is_active=False, priority=3)
    assert (directive.is_active, directive.priority) == (False, 3)
