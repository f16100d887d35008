"""Structured mental-model documents: sections of typed blocks, rendered to markdown.

The schema follows Astrocyte's (every model forbids unknown keys), so documents
move between the two systems unchanged. ``parse_markdown`` turns a markdown-only
model into this structure; ``render_markdown`` is its deterministic inverse for
documents that render unambiguously (ids equal to heading slugs, no newlines in
headings, paragraphs that do not look like lists, fences or headings).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)


class StructuredDocError(ValueError):
    """Bad structured-document input; the message starts with the offending field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


BLOCK_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


class _Block(_Strict):
    # Our addition to Astrocyte's schema: a stable id that survives edits elsewhere in the document
    # and every later revision. Optional on input (Astrocyte clients never send one).
    id: str | None = Field(default=None, pattern=BLOCK_ID_PATTERN)

    @model_serializer(mode="wrap")
    def _without_missing_id(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A block not yet given an id dumps exactly as Astrocyte's does.
        data: dict[str, Any] = handler(self)
        if data.get("id") is None:
            data.pop("id", None)
        return data


class ParagraphBlock(_Block):
    type: Literal["paragraph"]
    text: str


class BulletListBlock(_Block):
    type: Literal["bullet_list"]
    items: list[str]


class OrderedListBlock(_Block):
    type: Literal["ordered_list"]
    items: list[str]


class CodeBlock(_Block):
    type: Literal["code"]
    language: str = ""
    text: str


Block = Annotated[ParagraphBlock | BulletListBlock | OrderedListBlock | CodeBlock, Field(discriminator="type")]
BLOCK_TYPES = ("paragraph", "bullet_list", "ordered_list", "code")


class Section(_Strict):
    id: str = Field(min_length=1)
    heading: str
    level: int = Field(default=2, ge=1, le=6)
    blocks: list[Block] = Field(default_factory=list)


class StructuredDocument(_Strict):
    version: int = 1
    sections: list[Section] = Field(default_factory=list)

    def section(self, section_id: str) -> Section | None:
        return next((s for s in self.sections if s.id == section_id), None)

    def astrocyte_dump(self) -> dict[str, Any]:
        """Astrocyte's exact schema (no block ids), for clients and archives that validate it strictly."""
        data = self.model_dump(mode="json")
        for section in data["sections"]:
            section["blocks"] = [{k: v for k, v in block.items() if k != "id"} for block in section["blocks"]]
        return data


_NON_SLUG = re.compile(r"[^a-z0-9]+")
# No closing-sequence stripping: Astrocyte keeps "A ##" literally, and "C#" must survive.
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)\s*$")
_RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_ORDERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
_FENCE = re.compile(r"^\s*```\s*([\w+#.-]*)\s*$")


def slugify_heading(heading: str) -> str:
    return _NON_SLUG.sub("-", heading.lower()).strip("-") or "section"


def unique_id(base: str, existing: Iterable[str]) -> str:
    taken = set(existing)
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def render_block(block: Any) -> str:
    if block.type == "paragraph":
        return block.text
    if block.type == "bullet_list":
        return "\n".join(f"- {item}" for item in block.items)
    if block.type == "ordered_list":
        return "\n".join(f"{i}. {item}" for i, item in enumerate(block.items, start=1))
    return f"```{block.language}\n{block.text}\n```"


def render_markdown(doc: StructuredDocument) -> str:
    if not doc.sections:
        return ""
    parts = []
    for section in doc.sections:
        lines = ["#" * section.level + " " + section.heading]
        for block in section.blocks:
            lines.append("")
            lines.append(render_block(block))
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _chunks(lines: list[str]) -> list[list[str]]:
    """Blank-line separated chunks; a fenced code block is one chunk whatever it holds."""
    chunks: list[list[str]] = []
    current: list[str] = []
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            if not in_fence and current:
                chunks.append(current)
                current = []
            current.append(line)
            in_fence = not in_fence
            if not in_fence:
                chunks.append(current)
                current = []
            continue
        if in_fence:
            current.append(line)
            continue
        if not line.strip() or _RULE.match(line):
            if current:
                chunks.append(current)
                current = []
            continue
        current.append(line)
    if current:
        chunks.append(current)
    return chunks


def _chunk_to_block(chunk: list[str]) -> ParagraphBlock | BulletListBlock | OrderedListBlock | CodeBlock:
    fence = _FENCE.match(chunk[0])
    if fence:
        closed = len(chunk) > 1 and _FENCE.match(chunk[-1]) is not None
        body = chunk[1:-1] if closed else chunk[1:]
        return CodeBlock(type="code", language=fence.group(1), text="\n".join(body))
    bullets = [_BULLET.match(line) for line in chunk]
    if all(bullets):
        return BulletListBlock(type="bullet_list", items=[m.group(1) for m in bullets if m])
    numbered = [_ORDERED.match(line) for line in chunk]
    if all(numbered):
        return OrderedListBlock(type="ordered_list", items=[m.group(1) for m in numbered if m])
    return ParagraphBlock(type="paragraph", text=" ".join(line.strip() for line in chunk))


def blocks_from_markdown(text: str) -> list[ParagraphBlock | BulletListBlock | OrderedListBlock | CodeBlock]:
    """Blocks of one section body (headings are not special here)."""
    return [_chunk_to_block(chunk) for chunk in _chunks(text.splitlines())]


def parse_markdown(text: str) -> StructuredDocument:
    """ATX headings open sections; text before the first heading becomes an ``Overview`` section."""
    sections: list[Section] = []
    heading: str | None = None
    level = 2
    body: list[str] = []
    in_fence = False

    def flush() -> None:
        blocks = blocks_from_markdown("\n".join(body))
        if heading is None and not blocks:
            return
        title = heading if heading is not None else "Overview"
        sid = unique_id(slugify_heading(title), (s.id for s in sections))
        sections.append(Section(id=sid, heading=title, level=level, blocks=list(blocks)))

    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            flush()
            heading, level, body = match.group(2), len(match.group(1)), []
        else:
            body.append(line)
    flush()
    return StructuredDocument(sections=sections)


def format_loc(prefix: str, loc: Iterable[Any], skip: Iterable[str] = BLOCK_TYPES) -> str:
    """``prefix`` + pydantic location as ``.field[3].sub``; discriminated-union tags are left out.

    Pydantic puts the tag right after the union's position (start, a list index, or ``block``),
    so only a tag name in such a position is dropped; a field that happens to share it stays.
    """
    tags = set(skip)
    out = prefix
    previous: Any = None
    for part in loc:
        is_tag = part in tags and (previous is None or isinstance(previous, int) or previous == "block")
        if isinstance(part, int):
            out += f"[{part}]"
        elif not is_tag:
            out += f".{part}" if out else str(part)
        previous = part
    return out


def validation_messages(exc: ValidationError, prefix: str, skip: Iterable[str] = BLOCK_TYPES,
                        limit: int = 5) -> list[str]:
    tags = tuple(skip)
    messages = []
    for error in exc.errors()[:limit]:
        loc, msg = tuple(error.get("loc", ())), error.get("msg", "")
        if error.get("type") in ("union_tag_not_found", "union_tag_invalid"):
            # Point at the discriminator field itself ("operations[0].op"), not at the whole object.
            loc += (str(error.get("ctx", {}).get("discriminator", "")).strip("'\""),)
            if error["type"] == "union_tag_not_found":
                msg = "Field required"
        messages.append(f"{format_loc(prefix, loc, tags)}: {msg}")
    return messages


def _seed_section(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """The documented ``{"title", "content"}`` shape, translated to the real schema."""
    extra = sorted(set(raw) - {"title", "content", "id", "level"})
    if extra:
        raise StructuredDocError(f"{where}.{extra[0]}: Extra inputs are not permitted")
    title = raw.get("title")
    if not isinstance(title, str) or not title.strip():
        raise StructuredDocError(f"{where}.title: Field required" if title is None
                                 else f"{where}.title: must be a non-empty string")
    content = raw.get("content", "")
    if not isinstance(content, str):
        raise StructuredDocError(f"{where}.content: must be a string")
    data: dict[str, Any] = {"heading": title.strip(),
                            "blocks": [b.model_dump() for b in blocks_from_markdown(content)]}
    for key in ("id", "level"):
        if key in raw:
            data[key] = raw[key]
    return data


def doc_from_sections(sections: list[dict[str, Any]]) -> StructuredDocument:
    """Sections in the real schema ({id?, heading, level?, blocks}) or the documented {title, content} shape."""
    if not isinstance(sections, list):
        raise StructuredDocError("sections: must be a list")
    prepared: list[dict[str, Any]] = []
    for i, raw in enumerate(sections):
        where = f"sections[{i}]"
        if not isinstance(raw, dict):
            raise StructuredDocError(f"{where}: must be an object")
        data = _seed_section(raw, where) if ("title" in raw or "content" in raw) else dict(raw)
        if data.get("id") in (None, ""):
            data.pop("id", None)
        elif not isinstance(data["id"], str):
            raise StructuredDocError(f"{where}.id: Input should be a valid string")
        prepared.append(data)
    # Explicit ids are reserved first so a generated id never takes one a later section asks for.
    taken: set[str] = set()
    for i, data in enumerate(prepared):
        if "id" in data:
            if data["id"] in taken:
                raise StructuredDocError(f"sections[{i}].id: duplicate section id {data['id']!r}")
            taken.add(data["id"])
    built: list[Section] = []
    for i, data in enumerate(prepared):
        if "id" not in data:
            heading = data.get("heading")
            data["id"] = unique_id(slugify_heading(heading if isinstance(heading, str) else ""), taken)
            taken.add(data["id"])
        try:
            built.append(Section.model_validate(data))
        except ValidationError as exc:
            raise StructuredDocError("; ".join(validation_messages(exc, f"sections[{i}]"))) from None
    return StructuredDocument(sections=built)


def load_document(data: dict[str, Any] | None, *, submitted: bool = False) -> StructuredDocument:
    """A stored or submitted ``structured_doc``; empty means an empty document.

    Every block of the result has an id. A stored document from before block ids existed gets
    ids derived from its section and position, so each read of it shows the same ids until the
    next save writes them down. A submitted document keeps the ids it carries (a repeated one is
    refused, naming it); its blocks without one get theirs when it is saved (``ensure_block_ids``),
    possibly carried over from the document it replaces (``carry_block_ids``).
    """
    if not data:
        return StructuredDocument()
    try:
        doc = StructuredDocument.model_validate(data)
    except ValidationError as exc:
        raise StructuredDocError("; ".join(validation_messages(exc, "structured_doc"))) from None
    if submitted:
        seen: dict[str, str] = {}
        for s_index, section in enumerate(doc.sections):
            for b_index, block in enumerate(section.blocks):
                if block.id is None:
                    continue
                where = f"structured_doc.sections[{s_index}].blocks[{b_index}].id"
                if block.id in seen:
                    raise StructuredDocError(f"{where}: duplicate block id {block.id!r} (also at {seen[block.id]})")
                seen[block.id] = where
        return doc
    return ensure_block_ids(doc, legacy=True)


def new_block_id() -> str:
    return "b" + secrets.token_hex(5)


def legacy_block_id(section_id: str, index: int) -> str:
    """The id a block stored without one is known by: fixed by where it stood when it was stored."""
    return "b" + hashlib.sha256(f"{section_id}\x00{index}".encode()).hexdigest()[:10]


def iter_blocks(doc: StructuredDocument) -> Iterable[tuple[Section, int, Any]]:
    for section in doc.sections:
        for index, block in enumerate(section.blocks):
            yield section, index, block


def ensure_block_ids(doc: StructuredDocument, *, legacy: bool = False) -> StructuredDocument:
    """Give every block without an id one (in place; returns ``doc``). A repeated id keeps its first
    holder; the later block gets a fresh id."""
    taken: set[str] = set()
    for section, index, block in iter_blocks(doc):
        if block.id is None or block.id in taken:
            candidate = legacy_block_id(section.id, index) if legacy and block.id is None else new_block_id()
            while candidate in taken:
                candidate = new_block_id()
            block.id = candidate
        taken.add(block.id)
    return doc


def _content_key(block: Any) -> str:
    return repr(block.model_dump(exclude={"id"}))


def carry_block_ids(old: StructuredDocument, new: StructuredDocument) -> StructuredDocument:
    """A rewrite of the whole document (refresh, re-create) keeps the id of every block that is
    still there unchanged in the same section; new or changed blocks get fresh ids."""
    available: dict[tuple[str, str], list[str]] = {}
    for section, _, block in iter_blocks(old):
        if block.id is not None:
            available.setdefault((section.id, _content_key(block)), []).append(block.id)
    used: set[str] = {block.id for _, _, block in iter_blocks(new) if block.id is not None}
    for section, _, block in iter_blocks(new):
        if block.id is not None:
            continue
        ids = available.get((section.id, _content_key(block)), [])
        while ids and ids[0] in used:
            ids.pop(0)
        if ids:
            block.id = ids.pop(0)
            used.add(block.id)
    return ensure_block_ids(new)
