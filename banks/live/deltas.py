"""Delta operations on structured mental-model documents (Astrocyte's eight ops).

Rules, in this order:
1. Every op is validated against its schema first; one bad op rejects the whole
   list (``DeltaSchemaError``) and nothing changes.
2. Ops then apply in order to a deep copy, each seeing the result of the previous ones.
3. An op that names something missing is skipped with Astrocyte's reason text;
   the others still apply.
The seed documentation's shape (``block_index`` / ``new_content``) is accepted
and translated before validation.

Audit entries leave out ``None`` optionals (Astrocyte writes them as ``null``);
the keys that are present match Astrocyte's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from banks.live.structured_doc import (
    BLOCK_TYPES,
    Block,
    ParagraphBlock,
    Section,
    StructuredDocument,
    blocks_from_markdown,
    slugify_heading,
    unique_id,
    validation_messages,
)


class DeltaSchemaError(ValueError):
    """At least one op failed schema validation; ``messages`` has one line per problem."""

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
    heading: str
    level: int = Field(default=2, ge=1, le=6)
    blocks: list[Block] = Field(default_factory=list)
    after_section_id: str | None = None
    new_id: str | None = None


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
    new_heading: str


DeltaOp = Annotated[
    AppendBlock | InsertBlock | ReplaceBlock | RemoveBlock | AddSection | RemoveSection | ReplaceSectionBlocks
    | RenameSection,
    Field(discriminator="op"),
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(DeltaOp)
OP_NAMES = ("append_block", "insert_block", "replace_block", "remove_block", "add_section", "remove_section",
            "replace_section_blocks", "rename_section")
_INDEXED_OPS = frozenset({"insert_block", "replace_block", "remove_block"})
_BLOCK_OPS = frozenset({"append_block", "insert_block", "replace_block"})


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


def _content_block(content: str) -> dict[str, Any]:
    """One list or code chunk keeps its structure; any other text is one paragraph, verbatim."""
    blocks = blocks_from_markdown(content)
    if len(blocks) == 1 and blocks[0].type != "paragraph":
        return blocks[0].model_dump()
    return ParagraphBlock(type="paragraph", text=content.strip()).model_dump()


def _normalise_alias(raw: Any, where: str) -> Any:
    """``block_index`` → ``index`` and ``new_content`` (markdown text) → ``block``, where unambiguous.

    Anything left over (both spellings, an alias on an op without that field) stays
    in place and fails strict validation as an extra field.
    """
    if not isinstance(raw, dict):
        return raw
    op = dict(raw)
    name = op.get("op")
    if name in _INDEXED_OPS and "block_index" in op and "index" not in op:
        op["index"] = op.pop("block_index")
    if name in _BLOCK_OPS and "new_content" in op and "block" not in op:
        content = op.pop("new_content")
        if not isinstance(content, str):
            raise DeltaSchemaError([f"{where}.new_content: Input should be a valid string"])
        op["block"] = _content_block(content)
    return op


def validate_ops(ops: Any) -> list[Any]:
    """Strictly validated op models, or ``DeltaSchemaError`` listing every bad op."""
    if not isinstance(ops, list):
        raise DeltaSchemaError(["operations: must be a list"])
    parsed: list[Any] = []
    messages: list[str] = []
    for i, raw in enumerate(ops):
        where = f"operations[{i}]"
        try:
            parsed.append(_ADAPTER.validate_python(_normalise_alias(raw, where)))
        except DeltaSchemaError as exc:
            messages.extend(exc.messages)
        except ValidationError as exc:
            messages.extend(validation_messages(exc, where, skip=OP_NAMES + BLOCK_TYPES, limit=3))
    if messages:
        raise DeltaSchemaError(messages)
    return parsed


def _entry(op: Any) -> dict[str, Any]:
    return op.model_dump(exclude_none=True, exclude={"block", "blocks"})


def _apply_one(sections: list[Section], op: Any, entry: dict[str, Any]) -> str | None:
    """Apply ``op`` in place; return the skip reason, or None when applied."""
    if isinstance(op, AddSection):
        position = len(sections)
        if op.after_section_id is not None:
            anchor = next((i for i, s in enumerate(sections) if s.id == op.after_section_id), None)
            if anchor is None:
                return f"unknown after_section_id: {op.after_section_id}"
            position = anchor + 1
        new_id = unique_id(op.new_id or slugify_heading(op.heading), (s.id for s in sections))
        sections.insert(position, Section(id=new_id, heading=op.heading, level=op.level, blocks=list(op.blocks)))
        entry["assigned_id"] = new_id
        return None

    section = next((s for s in sections if s.id == op.section_id), None)
    if section is None:
        return f"unknown section_id: {op.section_id}"
    blocks = section.blocks
    if isinstance(op, AppendBlock):
        blocks.append(op.block)
    elif isinstance(op, InsertBlock):
        if op.index > len(blocks):
            return f"index out of range: {op.index} > {len(blocks)}"
        blocks.insert(op.index, op.block)
    elif isinstance(op, ReplaceBlock | RemoveBlock):
        if op.index >= len(blocks):
            return f"index out of range: {op.index} >= {len(blocks)}"
        if isinstance(op, ReplaceBlock):
            blocks[op.index] = op.block
        else:
            del blocks[op.index]
    elif isinstance(op, RemoveSection):
        sections.remove(section)
    elif isinstance(op, ReplaceSectionBlocks):
        section.blocks = list(op.blocks)
    elif isinstance(op, RenameSection):
        section.heading = op.new_heading
    return None


def apply_delta_ops(doc: StructuredDocument, ops: list[dict[str, Any]]) -> DeltaResult:
    """Apply ``ops`` to a copy of ``doc``. Raises ``DeltaSchemaError`` before touching anything."""
    parsed = validate_ops(ops)
    result = DeltaResult(doc=doc.model_copy(deep=True))
    for op in parsed:
        # Ops are fresh models, but copy so the result never shares blocks with the caller's op list.
        op = op.model_copy(deep=True)
        entry = _entry(op)
        reason = _apply_one(result.doc.sections, op, entry)
        if reason is None:
            result.applied.append(entry)
        else:
            result.skipped.append({**entry, "reason": reason})
    return result
