"""The entity graph by hand: link two entities (alias_of, reports_to, ...), unlink them."""

from __future__ import annotations

from django.db import transaction

from banks.models import Bank, Entity, EntityLink
from banks.services.audit import audit_record
from memoryhub.errors import InvalidInput, NotFound


def _entity(bank: Bank, entity_id: str) -> Entity:
    entity = Entity.objects.filter(bank=bank, entity_id=entity_id).first()
    if entity is None:
        raise NotFound(f"entity '{entity_id}' not found in bank '{bank.bank_id}'")
    return entity


def entity_link_create(*, bank: Bank, entity_a: str, entity_b: str, link_type: str, actor: str, evidence: str = "",
                       confidence: float = 1.0) -> EntityLink:
    link_type = (link_type or "").strip().lower().replace(" ", "_")
    if not link_type or len(link_type) > 64:
        raise InvalidInput("a link type of 1-64 characters is needed (alias_of, co_occurs_with, ...)",
                           field="link_type")
    if not 0.0 <= confidence <= 1.0:
        raise InvalidInput("must be between 0 and 1", field="confidence")
    a, b = _entity(bank, entity_a), _entity(bank, entity_b)
    if a.pk == b.pk:
        raise InvalidInput("an entity cannot link to itself", field="entity_b")
    with transaction.atomic():
        link, _ = EntityLink.objects.update_or_create(
            bank=bank, entity_a=a, entity_b=b, link_type=link_type,
            defaults={"evidence": evidence, "confidence": confidence})
        if link_type == "alias_of" and a.name not in b.aliases:
            # "A alias_of B": B is the canonical entity and answers to A's name too.
            Entity.objects.filter(bank=bank, pk=b.pk).update(aliases=[*b.aliases, a.name])
        audit_record(actor=actor, action="entity.link", bank=bank, target_ids=[a.entity_id, b.entity_id],
                     details={"link_type": link_type})
    return link


def entity_link_delete(*, bank: Bank, link_id: int, actor: str) -> None:
    link = EntityLink.objects.with_entities(bank).filter(pk=link_id).first()
    if link is None:
        raise NotFound("link not found")
    with transaction.atomic():
        if link.link_type == "alias_of":
            target = link.entity_b
            Entity.objects.filter(bank=bank, pk=target.pk).update(aliases=[a for a in target.aliases if a != link.entity_a.name])
        link.delete()
        audit_record(actor=actor, action="entity.unlink", bank=bank,
                     target_ids=[link.entity_a.entity_id, link.entity_b.entity_id],
                     details={"link_type": link.link_type})
