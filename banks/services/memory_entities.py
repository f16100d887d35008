"""A memory's entities by hand: an operator adds one, removes one, or changes an entity's type.

Mentions move through the owner of memory rows (banks.services.memory_rows): the counters follow in the
same transaction. Each change is one audit event on the memory. A tombstone's entities are not edited.
"""

from __future__ import annotations

from django.db import transaction

from banks.models import Entity, Memory
from banks.services.audit import audit_record
from banks.services.entities import attach_entities
from banks.services.memory_rows import ensure_editable, mentions_unlink_pairs
from memoryhub.errors import InvalidInput, NotFound
from memoryhub.input_rules import check_text

MAX_NAME = 500
MAX_TYPE = 64


def _clean(value: str, field: str, limit: int) -> str:
    value = check_text(str(value or ""), field).strip()
    if not value:
        raise InvalidInput("is empty", field=field)
    if len(value) > limit:
        raise InvalidInput(f"longer than {limit} characters", field=field)
    return value


def _mentioned(memory: Memory, entity_id: str) -> Entity:
    entity = memory.entities.filter(bank_id=memory.bank_id, memoryentity__bank_id=memory.bank_id,
                                    entity_id=entity_id).first()
    if entity is None:
        raise NotFound(f"memory '{memory.memory_id}' does not mention entity '{entity_id}'")
    return entity


def memory_entity_add(*, memory: Memory, name: str, entity_type: str, actor: str) -> Entity:
    """Link the memory to the bank's entity of that name (created with ``entity_type`` when the bank has
    none); an entity the memory already mentions is left as it is."""
    ensure_editable(memory)
    name = _clean(name, "name", MAX_NAME)
    entity_type = _clean(entity_type or "OTHER", "entity_type", MAX_TYPE).upper()
    with transaction.atomic():
        found, _linked = attach_entities(memory, [{"name": name, "entity_type": entity_type}])
        entity = Entity.objects.get(bank_id=memory.bank_id, pk=found[0])
        audit_record(actor=actor, action="memory.entity_add", bank=memory.bank, target_ids=[memory.memory_id],
                     details={"entity_id": entity.entity_id, "name": entity.name, "entity_type": entity.entity_type})
    return entity


def memory_entity_remove(*, memory: Memory, entity_id: str, actor: str) -> None:
    """The memory no longer mentions the entity (the entity stays in the bank, with one mention fewer)."""
    ensure_editable(memory)
    with transaction.atomic():
        entity = _mentioned(memory, entity_id)
        mentions_unlink_pairs(memory.bank_id, [(memory.pk, entity.pk)])
        audit_record(actor=actor, action="memory.entity_remove", bank=memory.bank, target_ids=[memory.memory_id],
                     details={"entity_id": entity.entity_id, "name": entity.name})


def memory_entity_retype(*, memory: Memory, entity_id: str, entity_type: str, actor: str) -> Entity:
    """Change the type of an entity the memory mentions (PERSON, LOCATION, ...). An entity is one row per
    bank, so the graph shows the new type wherever the entity appears."""
    ensure_editable(memory)
    entity_type = _clean(entity_type, "entity_type", MAX_TYPE).upper()
    with transaction.atomic():
        entity = _mentioned(memory, entity_id)
        before = entity.entity_type
        if before != entity_type:
            Entity.objects.filter(bank_id=memory.bank_id, pk=entity.pk).update(entity_type=entity_type)
            entity.entity_type = entity_type
            audit_record(actor=actor, action="entity.retype", bank=memory.bank, target_ids=[memory.memory_id],
                         details={"entity_id": entity.entity_id, "from": before, "to": entity_type})
    return entity


__all__ = ["memory_entity_add", "memory_entity_remove", "memory_entity_retype"]
