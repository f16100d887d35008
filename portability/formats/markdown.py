"""Markdown directories (AgentOS layout ``{scope}/{type}/{id}.md`` with YAML front-matter) and
Obsidian vaults (wikilinks resolved to the notes they name, #tags, embeds). Walking never follows
symlinks and skips dot-dirs; writing never uses an imported id as a raw path segment.

Our own writer keeps AgentOS's front-matter keys (``id``, ``type``, ``scope``, ``tags``, epoch-ms
``createdAt``) and puts everything else a memory holds under one ``memoryhub`` key (exact times,
source, layer, metadata, entities, links), so a bank comes back from its Markdown export whole."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml

from banks.content import content_hash
from memoryhub.input_rules import parse_time
from portability.formats.common import iso, number
from portability.formats.wikilinks import VaultIndex, VaultNote, parse_wikilinks
from portability.paths import DirectoryWriter, Location, as_location, directory_export, walk_files
from portability.records import ArchiveHeader, EntityRecord, LinkRecord, MemoryRecord, RecordError

TYPE_TO_FACT = {"episodic": "experience"}
OURS = "memoryhub"
_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.S)
_FENCE = re.compile(r"```.*?```|~~~.*?~~~", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_WIKILINK_SPAN = re.compile(r"!?\[\[[^\[\]\n]*\]\]")
# A tag starts after whitespace or line start, is made of word characters (any script), '-', '_' and '/',
# and must contain a non-digit: "#ff8800" and "#123" are not tags, URL fragments never follow a space.
_TAG = re.compile(r"(?:(?<=\s)|^)#([^\W\d_][\w/-]*|\d*[^\W\d][\w/-]*)", re.M | re.U)
_HEX = re.compile(r"^[0-9a-fA-F]{3,8}$")
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_YAML_BREAKS = re.compile("[\x85\u2028\u2029]")
_FRONT_KEYS = {"id", "type", "scope", "tags", "createdAt", "created", "strength", "aliases", "alias", "fact_type",
               OURS}


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


def _walk(root: Location) -> Iterator[Location]:
    return walk_files(root, ".md")


def _position(path: Location, root: Location) -> str:
    return "/".join(path.parts[len(root.parts):])


def _strings(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    return [str(value).strip()] if value not in (None, "") and str(value).strip() else []


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _note_id(meta: dict[str, Any]) -> str | None:
    return meta["id"] if isinstance(meta.get("id"), str) and meta["id"] else None


def _memory_id(meta: dict[str, Any], position: str, obsidian: bool) -> str | None:
    return _note_id(meta) or (f"note:{position.removesuffix('.md')}" if obsidian else None)


def _read(path: Location) -> tuple[dict[str, Any], str]:
    meta, body = front_matter(path.read_text(encoding="utf-8-sig"))
    return meta, body.strip()


def _newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _ours(meta: dict[str, Any], record: MemoryRecord) -> None:
    """Restore what our own writer kept under the ``memoryhub`` key. It is the memory as it was: tags from
    the front-matter only and links from the block only (the body's #tags and wikilinks were already
    counted when the memory first came in; read again they would add what it never had)."""
    kept = meta.get(OURS)
    if not isinstance(kept, dict):
        return
    if isinstance(kept.get("text"), str) and _newlines(kept["text"]).strip() == _newlines(record.text):
        record.text = kept["text"]  # the body is trimmed when read; the exact text was kept
    record.metadata = dict(kept["metadata"]) if isinstance(kept.get("metadata"), dict) else {}
    for name in ("occurred_at", "created_at", "retained_at"):
        if kept.get(name):
            setattr(record, name, _time(kept[name]))
    record.source = kept.get("source") if isinstance(kept.get("source"), str) else None
    record.memory_layer = kept.get("memory_layer") if isinstance(kept.get("memory_layer"), str) else None
    record.entities = [EntityRecord(name=str(e["name"]), entity_type=str(e.get("entity_type") or "OTHER"),
                                    aliases=_strings(e.get("aliases")))
                       for e in _list(kept.get("entities")) if isinstance(e, dict) and e.get("name")]
    record.tags = [t.lstrip("#") for t in _strings(meta.get("tags"))]
    record.links = [LinkRecord(target_id=str(link["target_id"]), link_type=str(link.get("link_type") or "related"),
                                confidence=number(link.get("confidence")),
                                metadata=dict(link["metadata"]) if isinstance(link.get("metadata"), dict) else {})
                     for link in _list(kept.get("links")) if isinstance(link, dict) and link.get("target_id")]


def _tags(meta: dict[str, Any], body: str, obsidian: bool) -> list[str]:
    tags = [t.lstrip("#") for t in _strings(meta.get("tags"))]
    if obsidian:
        prose = _WIKILINK_SPAN.sub(" ", _INLINE_CODE.sub(" ", _FENCE.sub(" ", body)))
        for tag in _TAG.findall(prose):
            tag = tag.rstrip("/-")
            if tag and not _HEX.match(tag) and tag not in tags:
                tags.append(tag)
    return tags


def _wikilinks(body: str, position: str, index: VaultIndex, own_id: str | None,
               metadata: dict[str, Any]) -> list[LinkRecord]:
    """Links to the notes the body's wikilinks and note embeds resolve to; the rest stays in metadata."""
    links: dict[tuple[str, str], LinkRecord] = {}
    written: list[dict[str, str]] = []
    embeds: list[dict[str, str]] = []
    unresolved: list[str] = []
    for link in parse_wikilinks(body):
        entry = {"target": link.target, **({"heading": link.heading} if link.heading else {}),
                 **({"alias": link.alias} if link.alias else {})}
        (embeds if link.embed else written).append(entry)
        if not link.target:
            continue  # a heading of this same note
        note = index.resolve(link.target, position)
        if note is None:
            if not link.is_attachment:
                unresolved.append(link.target)
            continue
        kind = "embed" if link.embed else "wikilink"
        if note.memory_id != own_id and (note.memory_id, kind) not in links:
            links[(note.memory_id, kind)] = LinkRecord(target_id=note.memory_id, link_type=kind,
                                                       metadata={**entry, "path": note.path})
    metadata["obsidian"] = {"links": written, "embeds": embeds,
                            **({"unresolved": unresolved} if unresolved else {})}
    return list(links.values())


def _note(path: Location, root: Location, index: VaultIndex | None) -> MemoryRecord | RecordError:
    position = _position(path, root)
    obsidian = index is not None
    try:
        meta, body = _read(path)
    except (ValueError, UnicodeDecodeError) as exc:
        return RecordError(position, str(exc))
    if not body:
        return RecordError(position, "note has no body")
    kind = meta.get("type") if isinstance(meta.get("type"), str) else None
    metadata: dict[str, Any] = {"markdown": {"path": position}}
    memory_id = _memory_id(meta, position, obsidian)
    aliases = _strings(meta.get("aliases", meta.get("alias")))
    links = _wikilinks(body, position, index, memory_id, metadata) if index is not None else []
    if aliases:
        metadata.setdefault("obsidian", {})["aliases"] = aliases
    extra = {k: (v.isoformat() if isinstance(v, date | datetime) else v) for k, v in meta.items()
             if k not in _FRONT_KEYS}
    if extra:
        metadata["markdown"]["front_matter"] = extra
    if kind or meta.get("scope"):
        metadata["agentos"] = {"type": kind, "scope": meta.get("scope"), "strength": meta.get("strength")}
    fact_type = meta.get("fact_type") if isinstance(meta.get("fact_type"), str) else None
    record = MemoryRecord(
        text=body, memory_id=memory_id, fact_type=fact_type or TYPE_TO_FACT.get(kind or "", "world"),
        tags=_tags(meta, body, obsidian), metadata=metadata, created_at=_time(meta.get("createdAt",
                                                                                       meta.get("created"))),
        source="obsidian" if obsidian else "markdown", memory_layer=kind, links=links, position=position,
    )
    _ours(meta, record)
    return record


def _vault_note(path: Location, root: Location) -> VaultNote | None:
    position = _position(path, root)
    try:
        meta, body = _read(path)
    except (ValueError, UnicodeDecodeError):
        return None
    if not body:
        return None  # it will not become a memory, so a link to it cannot resolve: it is reported instead
    return VaultNote(path=position, memory_id=_memory_id(meta, position, True) or "",
                     aliases=tuple(_strings(meta.get("aliases", meta.get("alias")))), note_id=_note_id(meta),
                     body=content_hash(body))


def _obsidian_records(root: Location) -> Iterator[MemoryRecord | RecordError]:
    """Two passes: the first learns every note's path, aliases, id and body; the second reads the notes,
    resolving links against all of them. A note given up for an identical one comes last, so the kept
    note is stored first and the other is reported as its duplicate."""
    paths = list(_walk(root))
    index = VaultIndex.build(n for n in (_vault_note(p, root) for p in paths) if n is not None)
    given_up = [p for p in paths if _position(p, root) in index.given_up]
    for path in [p for p in paths if p not in given_up] + given_up:
        yield _note(path, root, index)


def _reader(obsidian: bool):  # noqa: ANN202
    def read(path: Path | Location, **_: Any) -> tuple[ArchiveHeader, Iterator[MemoryRecord | RecordError]]:
        root = as_location(path)
        if not root.is_dir():
            raise ValueError(f"{root.shown} is not a directory")

        def records() -> Iterator[MemoryRecord | RecordError]:
            if obsidian:
                yield from _obsidian_records(root)
                return
            for note in _walk(root):
                yield _note(note, root, None)

        return ArchiveHeader(format="obsidian" if obsidian else "markdown"), records()

    return read


read_markdown = _reader(obsidian=False)
read_obsidian = _reader(obsidian=True)


def safe_segment(value: str, fallback: str) -> str:
    cleaned = _SAFE.sub("_", value or "").strip("._")[:120]
    return cleaned or fallback


def _epoch_ms(value: datetime | None) -> int | None:
    return int(value.astimezone(UTC).timestamp() * 1000) if value is not None else None


def _front(record: MemoryRecord, kind: str, scope: str) -> dict[str, Any]:
    ours: dict[str, Any] = {
        "occurred_at": iso(record.occurred_at), "created_at": iso(record.created_at),
        "retained_at": iso(record.retained_at), "source": record.source, "memory_layer": record.memory_layer,
        "metadata": record.metadata or {},
        "entities": [{"name": e.name, "entity_type": e.entity_type, "aliases": list(e.aliases)}
                     for e in record.entities],
        "links": [{"target_id": link.target_id, "link_type": link.link_type, "confidence": link.confidence,
                   **({"metadata": link.metadata} if link.metadata else {})} for link in record.links]}
    return {"id": record.memory_id, "type": kind, "scope": scope, "tags": list(record.tags),
            "createdAt": _epoch_ms(record.created_at), "fact_type": record.fact_type,
            OURS: {k: v for k, v in ours.items() if v not in (None, [], {}) or k == "metadata"}
            # The body loses what is around it, and a file read as text turns CR LF into LF: the exact text is kept.
            | ({"text": record.text} if record.text != record.text.strip() or "\r" in record.text else {})}


def write_markdown(path: Path | Location | DirectoryWriter, header: ArchiveHeader,
                   records: Iterable[MemoryRecord]) -> int:
    """``{scope}/{type}/{id}.md``, every segment slugged. Into a directory export being built, or (a path)
    into a new one that replaces only an earlier export of the same name."""
    if isinstance(path, DirectoryWriter):
        return _write_notes(path, records)
    with directory_export(as_location(path)) as writer:
        return _write_notes(writer, records)


def _write_notes(writer: DirectoryWriter, records: Iterable[MemoryRecord]) -> int:
    count = 0
    used: set[tuple[str, ...]] = set()
    for record in records:
        agentos = (record.metadata or {}).get("agentos") or {}
        kind = agentos.get("type") or ("episodic" if record.fact_type == "experience" else "semantic")
        scope = agentos.get("scope") or "user"
        folder = (safe_segment(str(scope), "user"), safe_segment(str(kind), "semantic"))
        stem = safe_segment(record.memory_id or "", f"memory-{count}")
        # Two ids that slug alike ("a/b", "a_b") must not overwrite each other; the id itself is in the file.
        target, n = (*folder, f"{stem}.md"), 1
        while target in used:
            n += 1
            target = (*folder, f"{stem}-{n}.md")
        used.add(target)
        front = _front(record, str(kind), str(scope))
        # YAML reads NEL and the Unicode line and paragraph separators as line breaks (folded into spaces): a
        # front-matter holding one is written with escapes, so it reads back exact.
        meta = yaml.safe_dump(front, allow_unicode=not _YAML_BREAKS.search(
            json.dumps(front, ensure_ascii=False, default=str)), sort_keys=False)
        writer.write_text(target, f"---\n{meta}---\n{record.text}\n")
        count += 1
    return count
