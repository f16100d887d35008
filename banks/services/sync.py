"""Sync push: a client sends records it owns (by id); each is stored, left unchanged, found to
duplicate another memory, or rejected, and the answer says which, record by record.

Pushing the same batch again changes nothing (idempotent by id and content hash). As Astrocyte's
gateway, a pushed id's text is immutable: new text under an id the bank holds is ``rejected`` and
nothing changes (a teammate's client, which never re-reads an id it has, would otherwise keep the old
text unknowingly); the same text with other tags or metadata is ``unchanged`` and the stored fields
stay. A forgotten id is never brought back by a push: its tombstone stands. The reasons are
Astrocyte's own strings, so a client that matches on them behaves the same here.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Any

from banks.access import Principal, authorize
from banks.content import content_hash
from banks.models import Bank, Memory
from banks.services.memories import memory_retain
from memoryhub.errors import InvalidInput, MemoryHubError

MAX_RECORDS = 100
REASON_IN_USE = "id is already in use with different text; memory text is immutable"
REASON_FORGOTTEN = "id was forgotten; a forgotten memory can't be pushed again"
REASON_METADATA_IGNORED = "text unchanged; metadata updates are not accepted by push"
RECORD_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
HASH = re.compile(r"sha256:[0-9a-f]{64}")


def _rejected(record_id: Any, reason: str) -> dict[str, Any]:
    return {"id": record_id, "status": "rejected", "reason": reason}


def _push_one(bank: Bank, actor: str, record: Any) -> dict[str, Any]:
    if not isinstance(record, dict):
        return _rejected(None, "a record must be an object")
    record_id = record.get("id")
    if not isinstance(record_id, str) or not RECORD_ID.fullmatch(record_id):
        return _rejected(record_id, "id must be 8-64 characters of [A-Za-z0-9_-]")
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        return _rejected(record_id, "text must be a non-empty string")
    metadata = record.get("metadata")
    if metadata is not None and (not isinstance(metadata, dict) or any(
            isinstance(v, dict | list) for v in metadata.values())):
        return _rejected(record_id, "metadata must be an object of scalar values")
    declared = record.get("content_hash")
    digest = content_hash(text)
    if declared is not None and (not isinstance(declared, str) or not HASH.fullmatch(declared)):
        return _rejected(record_id, "content_hash must be 'sha256:' and 64 hex digits")
    if declared is not None and declared != "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest():
        return _rejected(record_id, "content_hash does not match text")
    occurred_at = record.get("occurred_at")
    if occurred_at is not None:
        try:
            occurred_at = datetime.fromisoformat(str(occurred_at).replace("Z", "+00:00"))
        except ValueError:
            return _rejected(record_id, "occurred_at must be an ISO 8601 date-time")
        if occurred_at.tzinfo is None:  # naive means UTC, as Astrocyte reads it
            occurred_at = occurred_at.replace(tzinfo=UTC)
    existing = Memory.objects.filter(bank=bank, memory_id=record_id).first()
    try:
        if existing is not None:
            if existing.forgotten_at is not None:
                return _rejected(record_id, REASON_FORGOTTEN)
            if existing.content_hash != digest:
                return _rejected(record_id, REASON_IN_USE)
            same = (record.get("tags") is None or existing.tags == record["tags"]) and (
                record.get("fact_type") is None or existing.fact_type == record["fact_type"])
            return {"id": record_id, "status": "unchanged", "reason": None if same else REASON_METADATA_IGNORED}
        outcome = memory_retain(bank=bank, text=text, actor=actor, author=actor, tags=record.get("tags"),
                                metadata=metadata, occurred_at=occurred_at, fact_type=record.get("fact_type"),
                                memory_id=record_id)
    except MemoryHubError as exc:
        return _rejected(record_id, exc.message)
    if outcome.deduplicated:
        return {"id": record_id, "status": "duplicate", "duplicate_of": outcome.duplicate_of}
    return {"id": record_id, "status": "stored"}


def sync_push(*, bank: Bank, actor: str, records: list[Any], by: Principal | None = None) -> list[dict[str, Any]]:
    authorize(by, bank.bank_id, "write")  # once for the push: each record is then the server's write
    if not isinstance(records, list):
        raise InvalidInput("must be a list of records", field="records")
    if len(records) > MAX_RECORDS:
        raise InvalidInput(f"at most {MAX_RECORDS} records per push", field="records")
    return [_push_one(bank, actor, record) for record in records]


__all__ = ["MAX_RECORDS", "REASON_FORGOTTEN", "REASON_IN_USE", "REASON_METADATA_IGNORED", "sync_push"]
