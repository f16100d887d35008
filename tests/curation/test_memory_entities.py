"""A memory's entities follow its text and the operator: an edit re-extracts them (counters moved), and the
memory page adds, removes and retypes them, which the graph page then shows."""

from __future__ import annotations

import pytest
from django.db import transaction

from banks.models import AuditEvent, Entity, Memory
from banks.services.memories import memory_retain
from banks.services.memory_edit import memory_update
from banks.services.memory_rows import mentions_recount

pytestmark = pytest.mark.django_db


def _names(memory: Memory) -> set[str]:
    return set(memory.entities.values_list("name", flat=True))


def _counts_hold(bank) -> bool:
    with transaction.atomic():
        return mentions_recount(bank.pk, dry_run=True) == 0


def test_correcting_berlin_to_tokyo_re_extracts_the_entities(admin_client, bank):
    memory = memory_retain(bank=bank, text="Alice moved to Berlin for the new office.", actor="test").memory
    assert "Berlin" in _names(memory)
    response = admin_client.post(f"/banks/user-alice/memories/{memory.memory_id}/edit", {
        "text": "Alice moved to Tokyo for the new office.", "tags": "", "fact_type": "world", "metadata": "",
        "reason": "wrong city"})
    assert response.status_code == 302
    memory.refresh_from_db()
    assert "Tokyo" in _names(memory) and "Berlin" not in _names(memory)
    assert Entity.objects.get(bank=bank, name="Berlin").mention_count == 0
    assert Entity.objects.get(bank=bank, name="Tokyo").mention_count == 1
    assert _counts_hold(bank)
    page = admin_client.get(f"/banks/user-alice/memories/{memory.memory_id}/").content.decode()
    assert "Tokyo · LOCATION" in page and "Berlin ·" not in page


def test_an_edit_keeping_the_text_keeps_the_entities(bank):
    memory = memory_retain(bank=bank, text="Alice moved to Berlin.", actor="test").memory
    memory_update(memory=memory, actor="test", tags=["move"])
    assert "Berlin" in _names(memory) and _counts_hold(bank)


def test_an_operator_adds_retypes_and_removes_a_memorys_entities(admin_client, bank):
    memory = memory_retain(bank=bank, text="Alice met the platform team.", actor="test").memory
    url = f"/banks/user-alice/memories/{memory.memory_id}/entities"
    assert admin_client.post(url, {"action": "add", "name": "Noah Smith", "entity_type": "person"}).status_code == 302
    noah = Entity.objects.get(bank=bank, entity_id="noah smith")
    assert noah.entity_type == "PERSON" and noah.mention_count == 1 and "Noah Smith" in _names(memory)
    graph = admin_client.get("/banks/user-alice/graph/?entity=noah%20smith").content.decode()
    assert "Noah Smith" in graph

    admin_client.post(url, {"action": "retype", "entity_id": "noah smith", "entity_type": "ORGANIZATION"})
    noah.refresh_from_db()
    assert noah.entity_type == "ORGANIZATION"
    assert "ORGANIZATION" in admin_client.get("/banks/user-alice/graph/?entity=noah%20smith").content.decode()

    admin_client.post(url, {"action": "remove", "entity_id": "noah smith"})
    noah.refresh_from_db()
    assert "Noah Smith" not in _names(memory) and noah.mention_count == 0 and _counts_hold(bank)
    actions = set(AuditEvent.objects.filter(target_ids=[memory.memory_id]).values_list("action", flat=True))
    assert {"memory.entity_add", "entity.retype", "memory.entity_remove"} <= actions


def test_entity_edits_are_refused_clearly(admin_client, bank, operator_client, operator):
    from banks.models import BankMembership

    memory = memory_retain(bank=bank, text="Alice met the platform team.", actor="test").memory
    url = f"/banks/user-alice/memories/{memory.memory_id}/entities"
    response = admin_client.post(url, {"action": "remove", "entity_id": "nobody"}, follow=True)
    assert "Nothing changed" in response.content.decode()
    response = admin_client.post(url, {"action": "add", "name": "  ", "entity_type": "PERSON"}, follow=True)
    assert "Nothing changed" in response.content.decode() and response.status_code == 200
    BankMembership.objects.create(user=operator, bank=bank, role="viewer")
    assert operator_client.post(url, {"action": "add", "name": "Eve", "entity_type": "PERSON"}).status_code == 403
    assert not Entity.objects.filter(bank=bank, name="Eve").exists()
