"""A small structured document and the helpers the delta tests read it with."""

from __future__ import annotations

from banks.live.deltas import DeltaResult, apply_delta_ops
from banks.live.structured_doc import StructuredDocument

P = {"type": "paragraph", "text": "new"}
BASE = {"sections": [
    {"id": "tools", "heading": "Tools", "blocks": [{"type": "paragraph", "text": "Python; VS Code"}]},
    {"id": "people", "heading": "People", "blocks": []},
]}


def doc() -> StructuredDocument:
    return StructuredDocument.model_validate(BASE)


def contents(d: StructuredDocument, sid: str) -> list:
    section = d.section(sid)
    assert section is not None, sid
    return [b.items if b.type.endswith("list") else b.text for b in section.blocks]


def ids(d: StructuredDocument) -> list[str]:
    return [s.id for s in d.sections]


def apply(*ops: dict) -> DeltaResult:
    return apply_delta_ops(doc(), list(ops))
