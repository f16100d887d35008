"""Markdown directories (AgentOS layout ``{scope}/{type}/{id}.md`` with YAML front-matter) and
Obsidian vaults (wikilinks, #tags, embeds). Walking never follows symlinks and skips dot-dirs;
writing never uses an imported id as a raw path segment."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from portability.formats.common import iso, parse_time
from portability.records import ArchiveHeader, LinkRecord, MemoryRecord, RecordError

TYPE_TO_FACT = {"episodic": "experience"}
_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.S)
_FENCE = re.compile(r"```.*?```|~~~.*?~~~", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_WIKILINK = re.compile(r"(!?)\[\[([^\]|#]*)(?:#([^\]|]*))?(?:\|([^\]]*))?\]\]")
# A tag starts after whitespace or line start, is made of word characters (any script), '-', '_' and '/',
# and must contain a non-digit: "#ff8800" and "#123" are not tags, URL fragments never follow a space.
_TAG = re.compile(r"(?:(?<=\s)|^)#([^\W\d_][\w/-]*|\d*[^\W\d][\w/-]*)", re.M | re.U)
_HEX = re.compile(r"^[0-9a-fA-F]{3,8}$")
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def front_matter(text: str) -> tuple[dict[str, Any], str]:
    match = _FRONT.match(text)
    if not match:
        return {}, text
    try:
        data = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"front-matter is not valid YAML: {exc.__class__.__name__}") from None
    if not isinstance(data, dict):
        raise ValueError("front-matter is not a mapping")
    return data, text[match.end():]


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime | date):
        return parse_time(value.isoformat())
    return parse_time(value)


def _walk(root: Path) -> Iterator[Path]:
    for current, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (Path(current) / d).is_symlink())
        for name in sorted(files):
            path = Path(current) / name
            if name.endswith(".md") and not name.startswith(".") and not path.is_symlink():
                yield path


def _note(path: Path, root: Path, obsidian: bool) -> MemoryRecord | RecordError:
    position = str(path.relative_to(root))
    try:
        meta, body = front_matter(path.read_text(encoding="utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:
        return RecordError(position, str(exc))
    body = body.strip()
    if not body:
        return RecordError(position, "note has no body")
    tags = [str(t).strip().lstrip("#") for t in (meta.get("tags") or []) if str(t).strip()] \
        if isinstance(meta.get("tags"), list) else ([str(meta["tags"])] if meta.get("tags") else [])
    kind = meta.get("type") if isinstance(meta.get("type"), str) else None
    metadata: dict[str, Any] = {"markdown": {"path": position}}
    links: list[LinkRecord] = []
    if obsidian:
        prose = _INLINE_CODE.sub(" ", _FENCE.sub(" ", body))
        for tag in _TAG.findall(prose):
            tag = tag.rstrip("/-")
            if tag and not _HEX.match(tag) and tag not in tags:
                tags.append(tag)
        wikilinks: list[dict[str, str]] = []
        embeds: list[dict[str, str]] = []
        for bang, target, heading, alias in _WIKILINK.findall(body):
            entry = {"target": target.strip(), **({"heading": heading} if heading else {}),
                     **({"alias": alias} if alias else {})}
            (embeds if bang else wikilinks).append(entry)
            if not bang and target.strip():
                links.append(LinkRecord(target_id=f"note:{target.strip()}", link_type="wikilink",
                                        metadata=entry))
        metadata["obsidian"] = {"links": wikilinks, "embeds": embeds,
                                **({"aliases": meta["aliases"]} if meta.get("aliases") else {})}
    extra = {k: (v.isoformat() if isinstance(v, date | datetime) else v) for k, v in meta.items()
             if k not in {"id", "type", "scope", "tags", "createdAt", "created", "strength", "aliases"}}
    if extra:
        metadata["markdown"]["front_matter"] = extra
    if kind or meta.get("scope"):
        metadata["agentos"] = {"type": kind, "scope": meta.get("scope"), "strength": meta.get("strength")}
    created = _time(meta.get("createdAt", meta.get("created")))
    note_id = meta.get("id") if isinstance(meta.get("id"), str) and meta.get("id") else None
    return MemoryRecord(
        text=body, memory_id=note_id or (f"note:{path.relative_to(root).with_suffix('')}" if obsidian else None),
        fact_type=TYPE_TO_FACT.get(kind or "", "world"), tags=tags, metadata=metadata, created_at=created,
        source="obsidian" if obsidian else "markdown", memory_layer=kind, links=links, position=position,
    )


def _reader(obsidian: bool):  # noqa: ANN202
    def read(path: Path, **_: Any) -> tuple[ArchiveHeader, Iterator[MemoryRecord | RecordError]]:
        if not path.is_dir():
            raise ValueError(f"{path} is not a directory")
        root = path.resolve()

        def records() -> Iterator[MemoryRecord | RecordError]:
            for note in _walk(root):
                yield _note(note, root, obsidian)

        return ArchiveHeader(format="obsidian" if obsidian else "markdown"), records()

    return read


read_markdown = _reader(obsidian=False)
read_obsidian = _reader(obsidian=True)


def safe_segment(value: str, fallback: str) -> str:
    cleaned = _SAFE.sub("_", value or "").strip("._")[:120]
    return cleaned or fallback


def write_markdown(path: Path, header: ArchiveHeader, records: Iterable[MemoryRecord]) -> int:
    """``{scope}/{type}/{id}.md``; every segment slugged and the result checked to stay inside."""
    root = path.resolve()
    root.mkdir(parents=True, exist_ok=True)
    count = 0
    for record in records:
        agentos = (record.metadata or {}).get("agentos") or {}
        kind = agentos.get("type") or ("episodic" if record.fact_type == "experience" else "semantic")
        scope = agentos.get("scope") or "user"
        target = (root / safe_segment(str(scope), "user") / safe_segment(str(kind), "semantic")
                  / f"{safe_segment(record.memory_id or '', f'memory-{count}')}.md").resolve()
        if not target.is_relative_to(root):
            raise ValueError(f"refusing to write outside {root}: {target}")
        target.parent.mkdir(parents=True, exist_ok=True)
        meta = {"id": record.memory_id, "type": kind, "scope": scope, "tags": record.tags,
                "createdAt": iso(record.created_at), "fact_type": record.fact_type}
        target.write_text("---\n" + yaml.safe_dump(meta, allow_unicode=True, sort_keys=False) + "---\n"
                          + record.text + "\n", encoding="utf-8")
        count += 1
    return count
