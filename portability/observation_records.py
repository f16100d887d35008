"""An archive line that is an observation, not a memory: what our AMA and CSV writers (and Astrocyte's
export of a ``::obs`` bank) write as ``fact_type: "observation"`` with ``_obs_*`` bookkeeping in metadata.
Read back as an observation, so a round trip never turns one into a memory. Pure: no database here."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from memoryhub.input_rules import parse_time
from portability.records import MemoryRecord


def is_observation(record: MemoryRecord) -> bool:
    return record.fact_type == "observation" and "_obs_source_ids" in (record.metadata or {})


def _decoded(value: Any) -> Any:
    # Astrocyte stores these as JSON text (a list as a string, a float as a string); ours are values.
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def observation_fields(record: MemoryRecord) -> dict[str, Any]:
    """The observation's fields, for ``banks.services.observations.observation_import``."""
    meta = record.metadata or {}
    ids = _decoded(meta.get("_obs_source_ids"))
    confidence = _decoded(meta.get("_obs_confidence", 0.9))
    proof = _decoded(meta.get("_obs_proof_count", 1))
    now = datetime.now(UTC)
    created = record.created_at or parse_time(meta.get("_created_at")) or now
    return {
        "observation_id": record.memory_id or "", "text": record.text,
        "source_ids": [str(i) for i in ids] if isinstance(ids, list) else [],
        "scope": meta.get("_obs_scope") if isinstance(meta.get("_obs_scope"), str) else "bank",
        "confidence": confidence, "proof_count": proof if isinstance(proof, int) and not isinstance(proof, bool) else 1,
        "created_at": created,
        "updated_at": record.retained_at or parse_time(meta.get("_obs_updated_at")) or created,
    }


def observation_problem(record: MemoryRecord) -> str | None:
    """Why the observation cannot be stored (the rules ``observation_import`` applies), or None: asked
    by the strict pre-pass too, so a strict import refuses it before writing anything."""
    fields = observation_fields(record)
    confidence = fields["confidence"]
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0.5 <= confidence <= 1:
        return "observation: confidence must be a number between 0.5 and 1"
    if len(record.text) > 10_000:
        return "observation: longer than 10000 characters"
    if any(not i.strip() or len(i) > 255 for i in fields["source_ids"]):
        return "observation: a source id is 1-255 characters"
    return None
