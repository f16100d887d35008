"""Archive formats by name, with detection. Every reader takes a path and options and returns
(header, iterator of MemoryRecord | RecordError); the iterator opens the file itself, so it can be
re-read (strict imports read twice) and closes it when done."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from django.conf import settings

from portability.formats import ama
from portability.formats.compression import is_gzip, open_archive_bytes
from portability.paths import Location, as_location
from portability.records import ArchiveHeader, MemoryRecord, RecordError

Reader = Callable[..., tuple[ArchiveHeader, Iterator[MemoryRecord | RecordError]]]


class UnknownFormat(ValueError):
    pass


def max_decompressed_bytes() -> int:
    return int(getattr(settings, "MEMORYHUB_MAX_DECOMPRESSED_BYTES", 8 * 1024**3))


def _read_ama(path: Path | Location, *, max_line_bytes: int = ama.DEFAULT_MAX_LINE_BYTES, **_: Any
              ) -> tuple[ArchiveHeader, Iterator[MemoryRecord | RecordError]]:
    path = as_location(path)
    with open_archive_bytes(path, max_decompressed_bytes()) as fp:
        header, _records = ama.read_ama(fp, max_line_bytes=max_line_bytes)

    def records() -> Iterator[MemoryRecord | RecordError]:
        with open_archive_bytes(path, max_decompressed_bytes()) as fp:
            _, items = ama.read_ama(fp, max_line_bytes=max_line_bytes)
            yield from items

    return header, records()


def _lazy(module: str, name: str) -> Reader:
    def read(path: Path | Location, **options: Any) -> tuple[ArchiveHeader, Iterator[MemoryRecord | RecordError]]:
        import importlib

        return getattr(importlib.import_module(f"portability.formats.{module}"), name)(path, **options)

    return read


READERS: dict[str, Reader] = {
    "ama": _read_ama,
    "amplihack": _lazy("amplihack", "read_amplihack"),
    "agentos_json": _lazy("agentos", "read_agentos_json"),
    "agentos_ndjson": _lazy("agentos", "read_agentos_ndjson"),
    "sqlite": _lazy("agentos", "read_agentos_sqlite"),
    "markdown": _lazy("markdown", "read_markdown"),
    "obsidian": _lazy("markdown", "read_obsidian"),
    "chatgpt": _lazy("chatgpt", "read_chatgpt"),
    "csv": _lazy("csv_format", "read_csv"),
}


def register_reader(name: str, reader: Reader) -> None:
    READERS[name] = reader


# A whole-bank archive (portability.services.bank_archive): an AMA file whose header says ``mhba_version``.
# It restores as a whole into an empty bank, never line by line: no reader here.
WHOLE_BANK = "mhba"


def _whole_bank(head: bytes) -> bool:
    first = head.split(b"\n", 1)[0]
    try:
        header = json.loads(first.decode("utf-8-sig"))
    except ValueError:
        return False
    return isinstance(header, dict) and "mhba_version" in header


def detect_format(path: Path | Location) -> str:
    """Decide from the name and a bounded look at the start of the file or directory."""
    path = as_location(path)
    if path.is_dir():
        if (path / ".obsidian").is_dir():
            return "obsidian"
        return "markdown"
    name = path.name.lower()
    compressed = is_gzip(path)
    if compressed:
        name = name.removesuffix(".gz")
    with open_archive_bytes(path, max_decompressed_bytes()) as fp:
        head = fp.read(65536)
    if head.startswith(b"SQLite format 3\x00"):
        return "sqlite"
    if _whole_bank(head):
        return WHOLE_BANK
    if name.endswith((".ama.jsonl", ".mhba.jsonl")):
        # Named AMA: its own header errors ("missing _ama_version", "unsupported version") are the honest answer.
        return "ama"
    if not head.strip():
        raise UnknownFormat(f"{path.name} is empty")
    if b"\x00" in head:
        raise UnknownFormat(f"{path.name} is a binary file, not one of the formats read here "
                            f"({', '.join(sorted(READERS))})")
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff").lstrip()
    first_line = text.split("\n", 1)[0]
    if name.endswith((".jsonl", ".ndjson")) or (first_line.startswith("{") and first_line.rstrip().endswith("}")):
        try:
            first = json.loads(first_line)
        except ValueError:
            first = None
        if isinstance(first, dict) and "_ama_version" in first:
            return "ama"
        if isinstance(first, dict) and isinstance(first.get("traces"), list):
            return "agentos_json"  # a whole AgentOS export written on one line
        if isinstance(first, dict) and "format_version" in first and "semantic_nodes" in first:
            return "amplihack"  # a whole amplihack export written on one line
        if isinstance(first, dict):
            return "agentos_ndjson"
    if name.endswith(".csv"):
        return "csv"
    if text.startswith("["):
        if '"mapping"' in text and ('"current_node"' in text or '"create_time"' in text):
            return "chatgpt"
    if text.startswith("{"):
        if '"format_version"' in text and ('"semantic_nodes"' in text or '"agent_name"' in text):
            return "amplihack"
        if '"traces"' in text or '"brain' in text:
            return "agentos_json"
    if name.endswith(".md"):
        return "markdown"
    raise UnknownFormat(
        f"could not tell the format of {path.name}: not AMA or AgentOS NDJSON (the first line is not a JSON object), "
        "not amplihack, AgentOS or ChatGPT JSON (none of their top-level keys), not CSV or Markdown (no .csv or .md "
        f"name); name it explicitly (one of: {', '.join(sorted(READERS))})")


def open_archive(path: Path | Location, fmt: str | None = None, **options: Any
                 ) -> tuple[str, ArchiveHeader, Callable[[], Iterator[MemoryRecord | RecordError]]]:
    """(format, header, a callable giving a fresh iterator of records)."""
    path = as_location(path)
    # The configured caps, checked before parsing: one line of a line-based archive, one whole JSON
    # document (amplihack, AgentOS JSON, ChatGPT's conversations.json).
    options.setdefault("max_line_bytes", int(settings.MEMORYHUB_MAX_ARCHIVE_LINE_BYTES))
    options.setdefault("max_bytes", int(settings.MEMORYHUB_MAX_JSON_DOCUMENT_BYTES))
    # What a gzip archive read line by line may decompress to.
    options.setdefault("max_decompressed", max_decompressed_bytes())
    fmt = fmt or detect_format(path)
    if fmt == WHOLE_BANK:
        raise UnknownFormat(f"{path.name} is a whole-bank archive: it restores as a whole into an empty bank, "
                            "not line by line (or read its memories as AMA by naming the format ama)")
    if fmt not in READERS:
        raise UnknownFormat(f"unknown format {fmt!r}; use one of: {', '.join(sorted(READERS))}")
    header, first = READERS[fmt](path, **options)
    used = [False]

    def records() -> Iterator[MemoryRecord | RecordError]:
        if not used[0]:
            used[0] = True
            return first
        return READERS[fmt](path, **options)[1]

    return fmt, header, records
