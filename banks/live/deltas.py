"""Delta operations on structured mental-model documents (Astrocyte's eight ops).

Rules, in this order:
1. Every op is validated against its schema first; one bad op rejects the whole
   list (``DeltaSchemaError``) and nothing changes.
2. Ops then apply in order to a deep copy, each seeing the result of the previous ones.
3. An op that names something missing is skipped with Astrocyte's reason text;
   the others still apply.
The seed documentation's shape (``block_index`` / ``new_content``) is accepted
and translated before validation.

Our addition: every block has a stable id (``structured_doc.ensure_block_ids``), and
``insert_block`` / ``replace_block`` / ``remove_block`` take ``block_id`` wherever they take an
``index`` (``insert_block`` inserts before that block). With ``block_id`` the ``section_id`` may
be left out. A ``block_id`` that is not in the document (removed by someone else, or by an
earlier op of the same list), or that contradicts the ``section_id`` or ``index`` also given,
means the caller edits a version that no longer exists: ``StaleBlockError``, nothing applied.
A replaced block keeps its id; new blocks get fresh ids.

Audit entries leave out ``None`` optionals (Astrocyte writes them as ``null``);
the keys that are present match Astrocyte's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from banks.live.structured_doc import (
    BLOCK_ID_PATTERN,
    BLOCK_TYPES,
    Block,
    ParagraphBlock,
    Section,
    StructuredDocument,
    blocks_from_markdown,
    ensure_block_ids,
    new_block_id,
    slugify_heading,
    unique_id,
    validation_messages,
)


class DeltaSchemaError(ValueError):
    """At least one op failed schema validation; ``messages`` has one line per problem."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("; ".join(messages))
        self.messages = messages


class StaleBlockError(ValueError):
    """An op names a block id the document does not hold where the op says; the message names it."""

    def __init__(self, position: int, block_id: str, message: str) -> None:
        super().__init__(f"operations[{position}].block_id: {message}")
        self.position = position
        self.block_id = block_id


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Targeted(_Op):
    """A block named by ``section_id`` + ``index`` (Astrocyte) or by ``block_id`` (ours).

    Both optional here; ``validate_ops`` reports a missing one with Astrocyte's message.
    """

    section_id: str | None = None
    index: int | None = Field(default=None, ge=0)
    block_id: str | None = Field(default=None, pattern=BLOCK_ID_PATTERN)


class AppendBlock(_Op):
    op: Literal["append_block"]
    section_id: str
    block: Block


class InsertBlock(_Targeted):
    op: Literal["insert_block"]
    block: Block


class ReplaceBlock(_Targeted):
    op: Literal["replace_block"]
    block: Block


class RemoveBlock(_Targeted):
    op: Literal["remove_block"]


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
    # Only a string names an op; anything else (a list, an object) fails validation below.
    name = op.get("op") if isinstance(op.get("op"), str) else None
    if name in _INDEXED_OPS and "block_index" in op and "index" not in op:
        op["index"] = op.pop("block_index")
    if name in _BLOCK_OPS and "new_content" in op and "block" not in op:
        content = op.pop("new_content")
        if not isinstance(content, str):
            raise DeltaSchemaError([f"{where}.new_content: Input should be a valid string"])
        op["block"] = _content_block(content)
    return op


def _target_messages(raw: Any, where: str) -> list[str]:
    """Astrocyte requires ``section_id`` and ``index``; a ``block_id`` stands for both."""
    if (not isinstance(raw, dict) or not isinstance(raw.get("op"), str) or raw["op"] not in _INDEXED_OPS
            or raw.get("block_id") is not None):
        return []
    return [f"{where}.{name}: Field required" for name in ("section_id", "index") if raw.get(name) is None]


def validate_ops(ops: Any) -> list[Any]:
    """Strictly validated op models, or ``DeltaSchemaError`` listing every bad op."""
    if not isinstance(ops, list):
        raise DeltaSchemaError(["operations: must be a list"])
    parsed: list[Any] = []
    messages: list[str] = []
    for i, raw in enumerate(ops):
        where = f"operations[{i}]"
        try:
            op = _normalise_alias(raw, where)
            messages.extend(_target_messages(op, where))
            parsed.append(_ADAPTER.validate_python(op))
        except DeltaSchemaError as exc:
            messages.extend(exc.messages)
        except ValidationError as exc:
            messages.extend(validation_messages(exc, where, skip=OP_NAMES + BLOCK_TYPES, limit=3))
    if messages:
        raise DeltaSchemaError(messages)
    return parsed


# Optional fields Astrocyte's own op models declare: its applied summaries carry them even when null.
_REPORTED_WHEN_NULL = {"add_section": ("after_section_id", "new_id")}


def _entry(op: Any) -> dict[str, Any]:
    entry: dict[str, Any] = op.model_dump(exclude_none=True, exclude={"block", "blocks"})
    for name in _REPORTED_WHEN_NULL.get(op.op, ()):
        entry.setdefault(name, None)
    return entry


def _claim(blocks: list[Any], taken: set[str]) -> None:
    """Ids for blocks entering the document: a supplied id is kept if free, else a fresh one."""
    for block in blocks:
        if block.id is None or block.id in taken:
            block.id = new_block_id()
            while block.id in taken:
                block.id = new_block_id()
        taken.add(block.id)


def _ids(sections: list[Section], skip: Section | None = None) -> set[str]:
    return {b.id for s in sections if s is not skip for b in s.blocks if b.id is not None}


def _target(sections: list[Section], op: Any, position: int, entry: dict[str, Any]) -> tuple[Section, int] | str:
    """The section and index ``op`` points at, or a skip reason; a stale block id raises."""
    if op.block_id is None:
        section = next((s for s in sections if s.id == op.section_id), None)
        return f"unknown section_id: {op.section_id}" if section is None else (section, op.index)
    found = next(((s, i) for s in sections for i, b in enumerate(s.blocks) if b.id == op.block_id), None)
    if found is None:
        raise StaleBlockError(position, op.block_id, f"unknown block {op.block_id!r} (removed, or never in "
                                                     "this document); reload the model and apply the change again")
    section, index = found
    if op.section_id is not None and op.section_id != section.id:
        raise StaleBlockError(position, op.block_id, f"block {op.block_id!r} is in section {section.id!r}, "
                                                     f"not {op.section_id!r}; reload the model")
    if op.index is not None and op.index != index:
        raise StaleBlockError(position, op.block_id, f"block {op.block_id!r} is at index {index}, not "
                                                     f"{op.index}; reload the model")
    entry.setdefault("section_id", section.id)
    return section, index


def _apply_one(sections: list[Section], op: Any, entry: dict[str, Any], position: int = 0) -> str | None:
    """Apply ``op`` in place; return the skip reason, or None when applied."""
    if isinstance(op, AddSection):
        position_at = len(sections)
        if op.after_section_id is not None:
            anchor = next((i for i, s in enumerate(sections) if s.id == op.after_section_id), None)
            if anchor is None:
                return f"unknown after_section_id: {op.after_section_id}"
            position_at = anchor + 1
        new_id = unique_id(op.new_id or slugify_heading(op.heading), (s.id for s in sections))
        _claim(op.blocks, _ids(sections))
        sections.insert(position_at, Section(id=new_id, heading=op.heading, level=op.level, blocks=list(op.blocks)))
        entry["assigned_id"] = new_id
        return None

    if isinstance(op, _Targeted):
        target = _target(sections, op, position, entry)
        if isinstance(target, str):
            return target
        section, index = target
        blocks = section.blocks
        if isinstance(op, InsertBlock):
            if index > len(blocks):
                return f"index out of range: {index} > {len(blocks)}"
            _claim([op.block], _ids(sections))
            blocks.insert(index, op.block)
            return None
        if index >= len(blocks):
            return f"index out of range: {index} >= {len(blocks)}"
        if isinstance(op, ReplaceBlock):
            # The slot is edited, not replaced by another block: it keeps its id.
            op.block.id = blocks[index].id
            blocks[index] = op.block
        else:
            del blocks[index]
        return None

    named = next((s for s in sections if s.id == op.section_id), None)
    if named is None:
        return f"unknown section_id: {op.section_id}"
    section = named
    if isinstance(op, AppendBlock):
        _claim([op.block], _ids(sections))
        section.blocks.append(op.block)
    elif isinstance(op, RemoveSection):
        sections.remove(section)
    elif isinstance(op, ReplaceSectionBlocks):
        # The section's own ids may come back (a reordering keeps them); others' may not.
        _claim(op.blocks, _ids(sections, skip=section))
        section.blocks = list(op.blocks)
    elif isinstance(op, RenameSection):
        section.heading = op.new_heading
    return None


def apply_delta_ops(doc: StructuredDocument, ops: list[dict[str, Any]]) -> DeltaResult:
    """Apply ``ops`` to a copy of ``doc``. Raises ``DeltaSchemaError`` before touching anything, and
    ``StaleBlockError`` (leaving ``doc`` untouched) when an op names a block that is not there."""
    parsed = validate_ops(ops)
    result = DeltaResult(doc=ensure_block_ids(doc.model_copy(deep=True), legacy=True))
    for position, op in enumerate(parsed):
        # Ops are fresh models, but copy so the result never shares blocks with the caller's op list.
        op = op.model_copy(deep=True)
        entry = _entry(op)
        reason = _apply_one(result.doc.sections, op, entry, position)
        if reason is None:
            result.applied.append(entry)
        else:
            result.skipped.append({**entry, "reason": reason})
    return result
