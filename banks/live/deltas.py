"""Delta operations on structured mental-model documents (Astrocyte's eight ops).

Rules, in this order:
1. Every op is validated against its schema first; one bad op rejects the whole
   list (``DeltaSchemaError``) and nothing changes.
2. Ops then apply in order to a copy, each seeing the result of the previous ones.
3. An op that names something missing is skipped with Astrocyte's reason text;
   the others still apply.
The seed documentation's shape (``block_index`` / ``new_content``) is accepted
and translated before validation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from banks.live.structured_doc import (
    Block,
    ParagraphBlock,
    Section,
    StructuredDocument,
    blocks_from_markdown,
    slugify_heading,
    unique_id,
)


class DeltaSchemaError(ValueError):
    def __init__(self, messages: list[str]) -> None:
        super().__init__("; ".join(messages))
        self.messages = messages


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AppendBlock(_Op):
    op: Literal["append_block"]
    section_id: str
    block: Block


class InsertBlock(_Op):
    op: Literal["insert_block"]
    section_id: str
    index: int = Field(ge=0)
    block: Block


class ReplaceBlock(_Op):
    op: Literal["replace_block"]
    section_id: str
    index: int = Field(ge=0)
    block: Block


class RemoveBlock(_Op):
    op: Literal["remove_block"]
    section_id: str
    index: int = Field(ge=0)


class AddSection(_Op):
    op: Literal["add_section"]
    heading: str = Field(min_length=1)
    level: int = Field(default=2, ge=1, le=6)
    blocks: list[Block] = Field(default_factory=list)
    after_section_id: str | None = None
    new_id: str | None = Field(default=None, min_length=1)


class RemoveSection(_Op):
    op: Literal["remove_section"]
    section_id: str


class ReplaceSectionBlocks(_Op):
    op: Literal["replace_section_blocks"]
    section_id: str
    blocks: list[Block] = Field(default_factory=list)


class RenameSection(_Op):
    op: Literal["rename_section"]
    section_id: str
    new_heading: str = Field(min_length=1)


DeltaOp = Annotated[
    AppendBlock | InsertBlock | ReplaceBlock | RemoveBlock | AddSection | RemoveSection | ReplaceSectionBlocks
    | RenameSection,
    Field(discriminator="op"),
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(DeltaOp)
OP_NAMES = ("append_block", "insert_block", "replace_block", "remove_block", "add_section", "remove_section",
            "replace_section_blocks", "rename_section")


@dataclass
class DeltaResult:
    doc: StructuredDocument
    applied: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.applied)

    # The seed documentation's names for the same lists.
    @property
    def applied_ops(self) -> list[dict[str, Any]]:
        return self.applied

    @property
    def skipped_ops(self) -> list[dict[str, Any]]:
        return self.skipped

    def summary(self) -> dict[str, Any]:
        return {"applied": self.applied, "skipped": self.skipped, "changed": self.changed,
                "applied_ops": self.applied, "skipped_ops": self.skipped}


def _normalise_alias(raw: Any) -> Any:
    """``block_index`` → ``index``; ``new_content`` (markdown text) → ``block``."""
    if not isinstance(raw, dict):
        return raw
    op = dict(raw)
    if "block_index" in op and "index" not in op:
        op["index"] = op.pop("block_index")
    if "new_content" in op and "block" not in op and op.get("op") in {"append_block", "insert_block",
                                                                       "replace_block"}:
        content = op.pop("new_content")
        if isinstance(content, str):
            blocks = blocks_from_markdown(content)
            op["block"] = (blocks[0] if len(blocks) == 1 else ParagraphBlock(type="paragraph", text=content.strip())
                           ).model_dump()
        else:
            op["block"] = content
    return op


def validate_ops(ops: Any) -> list[Any]:
    if not isinstance(ops, list):
        raise DeltaSchemaError(["operations: must be a list"])
    parsed, messages = [], []
    for i, raw in enumerate(ops):
        try:
            parsed.append(_ADAPTER.validate_python(_normalise_alias(raw)))
        except ValidationError as exc:
            for error in exc.errors()[:3]:
                loc = ".".join(str(p) for p in error.get("loc", ()) if p not in OP_NAMES)
                messages.append(f"operations[{i}]" + (f".{loc}" if loc else "") + f": {error.get('msg')}")
    if messages:
        raise DeltaSchemaError(messages)
    return parsed


def _entry(op: Any) -> dict[str, Any]:
    return {k: v for k, v in op.model_dump(exclude_none=True).items() if k not in {"block", "blocks"}}


def apply_delta_ops(doc: StructuredDocument, ops: Any) -> DeltaResult:
    parsed = validate_ops(ops)
    result = DeltaResult(doc=doc.model_copy(deep=True))
    sections = result.doc.sections

    def find(section_id: str) -> Section | None:
        return next((s for s in sections if s.id == section_id), None)

    for op in parsed:
        entry = _entry(op)
        reason = None
        if isinstance(op, AddSection):
            position = len(sections)
            if op.after_section_id is not None:
                anchor = find(op.after_section_id)
                if anchor is None:
                    reason = f"unknown after_section_id: {op.after_section_id}"
                else:
                    position = sections.index(anchor) + 1
            if reason is None:
                new_id = unique_id(op.new_id or slugify_heading(op.heading), [s.id for s in sections])
                sections.insert(position, Section(id=new_id, heading=op.heading, level=op.level,
                                                  blocks=list(op.blocks)))
                entry["assigned_id"] = new_id
        else:
            section = find(op.section_id)
            if section is None:
                reason = f"unknown section_id: {op.section_id}"
            elif isinstance(op, AppendBlock):
                section.blocks.append(op.block)
            elif isinstance(op, InsertBlock):
                if op.index > len(section.blocks):
                    reason = f"index out of range: {op.index} > {len(section.blocks)}"
                else:
                    section.blocks.insert(op.index, op.block)
            elif isinstance(op, ReplaceBlock | RemoveBlock):
                if op.index >= len(section.blocks):
                    reason = f"index out of range: {op.index} >= {len(section.blocks)}"
                elif isinstance(op, ReplaceBlock):
                    section.blocks[op.index] = op.block
                else:
                    del section.blocks[op.index]
            elif isinstance(op, RemoveSection):
                sections.remove(section)
            elif isinstance(op, ReplaceSectionBlocks):
                section.blocks = list(op.blocks)
            elif isinstance(op, RenameSection):
                section.heading = op.new_heading
        if reason is None:
            result.applied.append(entry)
        else:
            result.skipped.append({**entry, "reason": reason})
    return result
