"""Response bodies for live memory, graph, reflect and banks."""

from __future__ import annotations

from typing import Any

from banks.api.render import iso, memory_hit, recall_trace
from banks.live.structured_doc import load_document
from banks.models import Bank, Entity, MentalModel, MentalModelRevision
from banks.selectors.graph import GraphHit
from banks.selectors.observations import ObservationView
from banks.text_search import bank_language


def _with_block_ids(structured_doc: dict[str, Any] | None) -> dict[str, Any] | None:
    """A stored document as clients see it: every block with its id, also in documents stored before
    blocks had ids (their ids are derived, the same on every read, and written down on the next save)."""
    if not structured_doc:
        return structured_doc
    return load_document(structured_doc).model_dump(mode="json")


def mental_model(model: MentalModel) -> dict[str, Any]:
    return {
        "model_id": model.model_id,
        "bank_id": model.bank.bank_id,
        "title": model.title,
        "content": model.content,
        "scope": model.scope,
        "source_ids": list(model.source_ids),
        "revision": model.revision,
        "refreshed_at": iso(model.refreshed_at),
        "kind": model.kind,
        "structured_doc": _with_block_ids(model.structured_doc),
        "source_timestamps": None,
        "is_active": model.is_active,
        "priority": model.priority,
        "created_at": iso(model.created_at),
        "deleted_at": iso(model.deleted_at),
    }


def directive(model: MentalModel) -> dict[str, Any]:
    from banks.selectors.live_layers import rule_text

    return {**mental_model(model), "rule_text": rule_text(model.structured_doc, model.content)}


def revision(row: MentalModelRevision, *, full: bool = True) -> dict[str, Any]:
    body = {"revision": row.number, "action": row.action, "author": row.author, "created_at": iso(row.created_at),
            "title": row.title, "scope": row.scope, "change_summary": row.change_summary}
    if full:
        body.update({"content": row.content, "structured_doc": _with_block_ids(row.structured_doc),
                     "source_ids": list(row.source_ids), "operations": row.operations})
    return body


def observation(view: ObservationView) -> dict[str, Any]:
    row = view.observation
    return {
        "id": row.observation_id,
        "text": row.text,
        "trend": view.trend,
        "proof_count": row.proof_count,
        "source_ids": view.source_ids,
        "confidence": row.confidence,
        "updated_at": iso(row.updated_at),
        "scope": row.scope,
        "created_at": iso(row.created_at),
        "evidence_timestamps": [iso(t) for t in view.evidence_times],
        "invalidated_at": iso(row.invalidated_at),
        "bank_id": row.bank.bank_id,
        # Evidence ids that are no memory of this bank: kept on the observation, linked to nothing.
        "unresolved_source_ids": view.unresolved_ids,
    }


def entity(row: Entity) -> dict[str, Any]:
    return {"id": row.entity_id, "name": row.name, "entity_type": row.entity_type, "aliases": list(row.aliases),
            "metadata": row.metadata, "embedding": None, "mention_count": row.mention_count}


def graph_hit(hit: GraphHit) -> dict[str, Any]:
    return {"memory_id": hit.memory_id, "text": hit.text, "connected_entities": hit.connected_entities,
            "depth": hit.depth, "score": hit.score}


def bank(row: Bank, counts: dict[str, int] | None = None) -> dict[str, Any]:
    return {"bank_id": row.bank_id, "name": row.name, "description": row.description,
            "embedding_provider": row.embedding_provider or None, "dedup_threshold": row.dedup_threshold,
            "config": row.config, "search_language": bank_language(row.config), "created_at": iso(row.created_at), "updated_at": iso(row.updated_at),
            "last_activity_at": iso(row.last_activity_at), **({"counts": counts} if counts is not None else {})}


__all__ = ["bank", "directive", "entity", "graph_hit", "memory_hit", "mental_model", "observation",
           "recall_trace", "revision"]
