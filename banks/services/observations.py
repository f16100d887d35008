"""Observations: consolidated beliefs backed by evidence memories.

The trend is never stored; it is computed from the evidence times when read
(banks.live.trends). Evidence keeps the memory id as text, so provenance survives
a forgotten memory. Forgetting or editing a source memory invalidates the
observations that cite it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from banks.access import Principal, authorize
from banks.models import Bank, Memory, Observation, ObservationEvidence
from banks.providers import get_embedder
from banks.services.audit import audit_record
from memoryhub.errors import InvalidInput, NotFound
from memoryhub.input_rules import check_text

MIN_CONFIDENCE = 0.5


def _text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("an observation needs text", field="text")
    if len(text) > 10_000:
        raise InvalidInput("longer than 10000 characters", field="text")
    return check_text(text, "text").strip()


def _confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput("must be a number between 0.5 and 1", field="confidence")
    if not MIN_CONFIDENCE <= float(value) <= 1.0:
        raise InvalidInput(f"must be between {MIN_CONFIDENCE} and 1 (got {value})", field="confidence")
    return round(float(value), 3)


def _ids(values: Any, field: str = "source_ids") -> list[str]:
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InvalidInput("must be a list of memory ids", field=field)
    return list(dict.fromkeys(values))


def _evidence_ids(ids: list[str], field: str) -> list[str]:
    """Evidence as given. An id that is a memory of the observation's own bank is linked to it; any other
    (no such memory, or another bank's: the same here, so nothing is told about other banks) is kept as an
    unresolved reference, never linked across banks (attach_evidence looks in the own bank only)."""
    for value in ids:
        if not value.strip() or len(value) > 255:
            raise InvalidInput("a memory id is 1-255 characters", field=field)
    return ids


def _embed(bank: Bank, text: str) -> dict[str, Any]:
    embedder = get_embedder(bank.embedding_provider or None)
    return {"embedding": embedder.embed([text])[0], "embedding_model": embedder.name,
            "embedding_dims": embedder.dimensions}


def attach_evidence(observation: Observation, memory_ids: Iterable[str], *, at: datetime | None = None) -> int:
    """Link memories as evidence; the trend counts each at the memory's own time. An id that is no memory
    of this bank is kept unresolved (``memory`` null), counted at the time it was attached."""
    ids = [i for i in memory_ids if i]
    memories = {m.memory_id: m for m in Memory.objects.filter(bank_id=observation.bank_id, memory_id__in=ids)}
    added = 0
    for memory_id in ids:
        memory = memories.get(memory_id)
        when = at or (memory.occurred_at or memory.created_at if memory else timezone.now())
        _, created = ObservationEvidence.objects.get_or_create(
            bank_id=observation.bank_id, observation=observation, memory_ref=memory_id,
            defaults={"memory": memory, "evidence_at": when},
        )
        added += int(created)
    return added


def unresolved_refs(observation: Observation) -> list[str]:
    return list(ObservationEvidence.objects.filter(bank_id=observation.bank_id, observation=observation,
                                                   memory__isnull=True).order_by("id").values_list("memory_ref", flat=True))


def observation_get(*, bank: Bank, observation_id: str, include_deleted: bool = False) -> Observation:
    rows = Observation.objects.filter(bank=bank, observation_id=observation_id)
    if not include_deleted:
        rows = rows.filter(deleted_at__isnull=True)
    observation = rows.first()
    if observation is None:
        raise NotFound(f"observation '{observation_id}' not found")
    return observation


def observation_create(*, bank: Bank, text: str, actor: str, source_ids: list[str] | None = None,
                       scope: str | None = None, confidence: float = 0.9, by: Principal | None = None) -> Observation:
    authorize(by, bank.bank_id, "write")
    text = _text(text)
    confidence = _confidence(confidence)
    ids = _evidence_ids(_ids(source_ids), "source_ids")
    embedded = _embed(bank, text)  # possibly a remote call: before the transaction opens
    now = timezone.now()
    with transaction.atomic():
        observation = Observation.objects.create(
            bank=bank, observation_id=uuid.uuid4().hex[:16], text=text, scope=scope or "bank",
            confidence=confidence, proof_count=1, created_at=now, updated_at=now, created_by=actor,
            **embedded,
        )
        attach_evidence(observation, ids)
        audit_record(actor=actor, action="observation.create", bank=bank, target_ids=[observation.observation_id],
                     details={"source_ids": ids[:100],
                              "unresolved_source_ids": unresolved_refs(observation)[:100]})
    return observation


def observation_import(*, bank: Bank, observation_id: str, text: str, actor: str, source_ids: list[str],
                       scope: str, confidence: float, proof_count: int, created_at: datetime,
                       updated_at: datetime) -> Observation | None:
    """An observation as an archive carries it (its id, proof count and times kept); None when the bank
    already holds that id (an import never overwrites an observation)."""
    text = _text(text)
    confidence = _confidence(confidence)
    ids = _evidence_ids(_ids(source_ids), "source_ids")
    if Observation.objects.filter(bank=bank, observation_id=observation_id).exists():
        return None
    embedded = _embed(bank, text)
    with transaction.atomic():
        observation = Observation.objects.create(
            bank=bank, observation_id=observation_id[:64], text=text, scope=scope or "bank", confidence=confidence,
            proof_count=max(1, proof_count), created_at=created_at, updated_at=updated_at, created_by=actor,
            **embedded)
        attach_evidence(observation, ids)
        audit_record(actor=actor, action="observation.create", bank=bank, target_ids=[observation.observation_id],
                     details={"source_ids": ids[:100], "imported": True})
    return observation


def observation_update(
    *, observation: Observation, actor: str, text: str | None = None, confidence: float | None = None,
    scope: str | None = None, add_source_ids: list[str] | None = None,
    remove_source_ids: list[str] | None = None, reason: str = "", by: Principal | None = None,
) -> Observation:
    authorize(by, observation.bank.bank_id, "write")
    fields: list[str] = []
    if text is not None and _text(text) != observation.text:
        observation.text = _text(text)
        for key, value in _embed(observation.bank, observation.text).items():
            setattr(observation, key, value)
        fields += ["text", "embedding", "embedding_model", "embedding_dims"]
    if confidence is not None:
        observation.confidence = _confidence(confidence)
        fields.append("confidence")
    if scope is not None and scope != observation.scope:
        observation.scope = scope
        fields.append("scope")
    with transaction.atomic():
        added = attach_evidence(observation, _evidence_ids(_ids(add_source_ids, "add_source_ids"),
                                                           "add_source_ids"))
        removed = 0
        if remove_source_ids:
            removed, _ = ObservationEvidence.objects.filter(
                bank_id=observation.bank_id, observation=observation, memory_ref__in=_ids(remove_source_ids, "remove_source_ids")).delete()
        if added:
            # New supporting evidence confirms the observation once more.
            observation.proof_count += 1
            fields.append("proof_count")
        if fields or removed:
            observation.updated_at = timezone.now()
            observation.save(update_fields=[*dict.fromkeys(fields), "updated_at"])
            audit_record(actor=actor, action="observation.update", bank=observation.bank,
                         target_ids=[observation.observation_id], reason=reason,
                         details={"fields": [f for f in fields if not f.startswith("embedding")],
                                  "evidence_added": added, "evidence_removed": removed})
    return observation


def observation_delete(*, observation: Observation, actor: str, reason: str = "",
                       by: Principal | None = None) -> bool:
    authorize(by, observation.bank.bank_id, "forget")
    with transaction.atomic():
        moved = Observation.objects.filter(bank_id=observation.bank_id, pk=observation.pk, deleted_at__isnull=True).update(
            deleted_at=timezone.now())
        if moved:
            audit_record(actor=actor, action="observation.delete", bank=observation.bank,
                         target_ids=[observation.observation_id], reason=reason)
    return bool(moved)


def observations_invalidate_for_memories(
    *, bank: Bank, memory_ids: Iterable[str], actor: str, reason: str = "source memories changed"
) -> int:
    """Invalidate every live observation that cites any of ``memory_ids``; returns how many."""
    ids = list(memory_ids)
    if not ids:
        return 0
    affected = list(
        Observation.objects.live()
        .filter(bank=bank, evidence__bank_id=bank.pk, evidence__memory_ref__in=ids)
        .distinct()
        .values_list("observation_id", flat=True)
    )
    if not affected:
        return 0
    Observation.objects.filter(bank=bank, observation_id__in=affected).update(
        invalidated_at=timezone.now(), invalidated_reason=reason[:500]
    )
    audit_record(actor=actor, action="observation.invalidate", bank=bank, target_ids=affected, reason=reason,
                 details={"source_ids": ids[:100]})
    return len(affected)


def observation_invalidate(*, observation: Observation, actor: str, reason: str = "invalidated by an operator",
                           by: Principal | None = None) -> bool:
    authorize(by, observation.bank.bank_id, "write")
    with transaction.atomic():
        moved = Observation.objects.filter(bank_id=observation.bank_id, pk=observation.pk,
                                           invalidated_at__isnull=True).update(
            invalidated_at=timezone.now(), invalidated_reason=reason[:500])
        if moved:
            audit_record(actor=actor, action="observation.invalidate", bank=observation.bank,
                         target_ids=[observation.observation_id], reason=reason)
    return bool(moved)
