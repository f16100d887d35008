"""Structured mental-model documents: sections of typed blocks, rendered to markdown.

The schema follows Astrocyte's (every model forbids unknown keys), so documents
move between the two systems unchanged. ``parse_markdown`` turns a markdown-only
model into this structure; ``render_markdown`` is its deterministic inverse for
documents that render unambiguously.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class StructuredDocError(ValueError):
    pass


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ParagraphBlock(_Strict):
    type: Literal["paragraph"]
    text: str


class BulletListBlock(_Strict):
    type: Literal["bullet_list"]
    items: list[str]


class OrderedListBlock(_Strict):
    type: Literal["ordered_list"]
    items: list[str]


class CodeBlock(_Strict):
    type: Literal["code"]
    language: str = ""
    text: str


Block = Annotated[ParagraphBlock | BulletListBlock | OrderedListBlock | CodeBlock, Field(discriminator="type")]


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


_NON_SLUG = re.compile(r"[^a-z0-9]+")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_RULE = re.compile(r"^\s*([-*_])\s*(\1\s*){2,}$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_ORDERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
_FENCE = re.compile(r"^\s*```\s*([\w+#.-]*)\s*$")


def slugify_heading(heading: str) -> str:
    return _NON_SLUG.sub("-", heading.lower()).strip("-") or "section"


def unique_id(base: str, existing: set[str] | list[str]) -> str:
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


def blocks_from_markdown(text: str) -> list[Any]:
    blocks: list[Any] = []
    for chunk in _chunks(text.splitlines()):
        fence = _FENCE.match(chunk[0])
        if fence:
            body = chunk[1:-1] if len(chunk) > 1 and _FENCE.match(chunk[-1]) else chunk[1:]
            blocks.append(CodeBlock(type="code", language=fence.group(1), text="\n".join(body)))
        elif all(_BULLET.match(line) for line in chunk):
            blocks.append(BulletListBlock(type="bullet_list", items=[_BULLET.match(x).group(1) for x in chunk]))
        elif all(_ORDERED.match(line) for line in chunk):
            blocks.append(OrderedListBlock(type="ordered_list", items=[_ORDERED.match(x).group(1) for x in chunk]))
        else:
            blocks.append(ParagraphBlock(type="paragraph", text=" ".join(line.strip() for line in chunk)))
    return blocks


def parse_markdown(text: str) -> StructuredDocument:
    """ATX headings open sections; text before the first heading becomes an ``Overview`` section."""
    sections: list[Section] = []
    heading, level, body = None, 2, []
    in_fence = False

    def flush() -> None:
        blocks = blocks_from_markdown("\n".join(body))
        if heading is None and not blocks:
            return
        title = heading if heading is not None else "Overview"
        sid = unique_id(slugify_heading(title), [s.id for s in sections])
        sections.append(Section(id=sid, heading=title, level=level, blocks=blocks))

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


def _error_text(exc: ValidationError, prefix: str) -> str:
    parts = []
    for error in exc.errors()[:5]:
        loc = ".".join(str(p) for p in error.get("loc", ()))
        parts.append(f"{prefix}.{loc}: {error.get('msg')}" if loc else f"{prefix}: {error.get('msg')}")
    return "; ".join(parts)


def doc_from_sections(sections: list[dict[str, Any]]) -> StructuredDocument:
    """Sections in the real schema ({heading, blocks, ...}) or the documented {title, content} shape."""
    if not isinstance(sections, list):
        raise StructuredDocError("sections: must be a list")
    built: list[Section] = []
    for i, raw in enumerate(sections):
        if not isinstance(raw, dict):
            raise StructuredDocError(f"sections[{i}]: must be an object")
        if "title" in raw or "content" in raw:
            extra = set(raw) - {"title", "content", "id", "level"}
            if extra:
                raise StructuredDocError(f"sections[{i}].{sorted(extra)[0]}: Extra inputs are not permitted")
            title = raw.get("title")
            if not isinstance(title, str) or not title.strip():
                raise StructuredDocError(f"sections[{i}].title: Field required")
            content = raw.get("content", "")
            if not isinstance(content, str):
                raise StructuredDocError(f"sections[{i}].content: must be a string")
            data = {"id": raw.get("id") or "", "heading": title.strip(), "level": raw.get("level", 2),
                    "blocks": [b.model_dump() for b in blocks_from_markdown(content)]}
        else:
            data = dict(raw)
            data.setdefault("id", "")
        if not data["id"]:
            data["id"] = unique_id(slugify_heading(str(data.get("heading", ""))), [s.id for s in built])
        elif data["id"] in {s.id for s in built}:
            raise StructuredDocError(f"sections[{i}].id: duplicate section id {data['id']!r}")
        try:
            built.append(Section.model_validate(data))
        except ValidationError as exc:
            raise StructuredDocError(_error_text(exc, f"sections[{i}]")) from None
    return StructuredDocument(sections=built)


def load_document(data: dict[str, Any] | None) -> StructuredDocument:
    if not data:
        return StructuredDocument()
    try:
        return StructuredDocument.model_validate(data)
    except ValidationError as exc:
        raise StructuredDocError(_error_text(exc, "structured_doc")) from None
