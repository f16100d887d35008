"""Whole-bank archives (``.mhba.jsonl``, optionally ``.gz``): everything a bank holds, in one file.

The file is an AMA v1 archive first: its header is an AMA header (plus
``mhba_version``) and every memory is an AMA line (``id``, ``text``, times,
entities, links), so Astrocyte's importer reads the memories. Everything else
is on extension lines ``{"_mhba": "<table>", "row": {...}}``: they carry neither
``id`` nor ``text``, which is exactly what Astrocyte's reader skips. Every line
also keeps the full row (``_mhba_row`` on memory lines), so a restore into an
empty bank of another MemoryHub reproduces it column by column, public ids
included: entities, memory-entity mentions, entity and memory links, observations
with their evidence, mental models and directives with every revision, wiki pages,
legal holds and the bank's settings.

Rows are streamed both ways, a batch at a time; row references between tables use
public ids (``memory_id``, ``entity_id``...), never database keys.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, models, transaction
from django.utils import timezone

from banks.models import (
    Bank,
    Entity,
    EntityLink,
    LegalHold,
    LifecyclePolicy,
    Memory,
    MemoryEntity,
    MemoryLink,
    MentalModel,
    MentalModelRevision,
    Observation,
    ObservationEvidence,
    WikiPage,
)
from banks.services.audit import audit_record
from banks.services.memory_rows import mentions_recount, rows_merged_into_set
from memoryhub.errors import Conflict, Unprocessable
from portability.formats.ama import AMA_VERSION, atomic_write, parse_iso
from portability.formats.common import bounded_lines
from portability.formats.compression import ArchiveTooLarge, open_archive_bytes
from portability.formats.registry import WHOLE_BANK, detect_format
from portability.models import PendingLink
from portability.paths import Location, as_location

MHBA_VERSION = 1
BATCH = 1000
SETTINGS = ("name", "description", "embedding_provider", "dedup_threshold", "config")
# (kind, model, {foreign key attname: (model, public id field)}), parents before children.
TABLES: list[tuple[str, type[models.Model], dict[str, tuple[type[models.Model], str]]]] = [
    ("memory", Memory, {"merged_into_id": (Memory, "memory_id")}),
    ("entity", Entity, {}),
    ("memory_entity", MemoryEntity, {"memory_id": (Memory, "memory_id"), "entity_id": (Entity, "entity_id")}),
    ("entity_link", EntityLink, {"entity_a_id": (Entity, "entity_id"), "entity_b_id": (Entity, "entity_id")}),
    ("memory_link", MemoryLink, {"source_id": (Memory, "memory_id"), "target_id": (Memory, "memory_id")}),
    ("observation", Observation, {}),
    ("observation_evidence", ObservationEvidence,
     {"observation_id": (Observation, "observation_id"), "memory_id": (Memory, "memory_id")}),
    ("mental_model", MentalModel, {}),
    ("mental_model_revision", MentalModelRevision, {"model_id": (MentalModel, "model_id")}),
    ("wiki_page", WikiPage, {}),
    ("legal_hold", LegalHold, {}),
    ("lifecycle_policy", LifecyclePolicy, {}),
    # Links an interrupted import still waits to resolve, by archive memory id.
    ("pending_link", PendingLink, {}),
]
KINDS = {kind: (model, refs) for kind, model, refs in TABLES}


def _columns(model: type[models.Model]) -> list[models.Field]:
    return [f for f in model._meta.concrete_fields
            if not f.primary_key and f.attname != "bank_id" and not isinstance(f, models.GeneratedField)]


def _bank_rows(bank: Bank, model: type[models.Model]) -> models.QuerySet:
    if any(f.attname == "bank_id" for f in model._meta.concrete_fields):
        return model._default_manager.filter(bank=bank)
    parents: dict[type[models.Model], str] = {MemoryEntity: "memory__bank", ObservationEvidence: "observation__bank",
                                              MentalModelRevision: "model__bank"}
    return model._default_manager.filter(**{parents[model]: bank})


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if value is not None and hasattr(value, "tolist"):
        return [float(x) for x in value.tolist()]
    return value


def _public_ids(bank: Bank, model: type[models.Model], field: str) -> dict[int, str]:
    return dict(_bank_rows(bank, model).values_list("pk", field))


def _dump_rows(bank: Bank, kind: str) -> Iterator[dict[str, Any]]:
    model, refs = KINDS[kind]
    names = [f.attname for f in _columns(model)]
    lookups = {attname: _public_ids(bank, target, field) for attname, (target, field) in refs.items()}
    for row in _bank_rows(bank, model).order_by("pk").values(*names).iterator(chunk_size=BATCH):
        for attname, ids in lookups.items():
            if row[attname] is not None:
                row[attname] = ids.get(row[attname])
        yield {name: _plain(value) for name, value in row.items()}


def _live(row: dict[str, Any]) -> bool:
    return row["forgotten_at"] is None and row["archived_at"] is None


def _ama_line(row: dict[str, Any]) -> dict[str, Any]:
    """The AMA view of a live memory row (what Astrocyte reads), with the full row beside it.

    A forgotten or archived memory is never an AMA line: any AMA reader would store it as live and undo
    the forget (a DSAR's too). It travels as an extension line, which only a whole-bank restore reads."""
    if not _live(row):
        return {"_mhba": "memory", "row": row}
    line = {"id": row["memory_id"], "text": row["text"], "fact_type": row["fact_type"], "tags": row["tags"],
            "metadata": row["metadata"], "occurred_at": row["occurred_at"], "created_at": row["created_at"],
            "retained_at": row["retained_at"], "source": row["source"], "memory_layer": row["memory_layer"]}
    line["_mhba_row"] = {k: v for k, v in row.items() if k not in ("memory_id", "text")}
    return line


def bank_archive_lines(bank: Bank, counts: dict[str, int] | None = None) -> Iterator[str]:
    """The archive, line by line (a file export and a download stream the same lines)."""
    counts = counts if counts is not None else {}
    header = {"_ama_version": AMA_VERSION, "bank_id": bank.bank_id, "exported_at": timezone.now().isoformat(),
              # The AMA-readable memory lines: live memories only (see _ama_line).
              "provider": "memoryhub", "memory_count": Memory.objects.filter(bank=bank).live().count(),
              "mhba_version": MHBA_VERSION}
    yield json.dumps(header, ensure_ascii=False) + "\n"
    yield json.dumps({"_mhba": "bank", "row": {k: getattr(bank, k) for k in SETTINGS}}, ensure_ascii=False) + "\n"
    for kind, _, _ in TABLES:
        counts[kind] = 0
        for row in _dump_rows(bank, kind):
            counts[kind] += 1
            line = _ama_line(row) if kind == "memory" else {"_mhba": kind, "row": row}
            yield json.dumps(line, ensure_ascii=False) + "\n"


def bank_archive_stream(*, bank: Bank, actor: str) -> Iterator[str]:
    """The archive for a download, audited like a file export."""
    audit_record(actor=actor, action="bank.export", bank=bank, details={"format": "mhba", "download": True})
    return bank_archive_lines(bank)


def bank_archive_export(*, bank: Bank, dest: Path | Location, actor: str,
                        progress: Callable[[int], None] | None = None) -> dict[str, int]:
    """Write the whole bank to ``dest`` atomically (0600); ``.gz`` compresses. Returns rows per table.

    ``progress(lines)`` every ``BATCH`` lines (a job's note and cancel check)."""
    counts: dict[str, int] = {}
    with atomic_write(dest) as out:
        for number, line in enumerate(bank_archive_lines(bank, counts), start=1):
            out.write(line)
            if progress is not None and number % BATCH == 0:
                progress(number)
    audit_record(actor=actor, action="bank.export", bank=bank, details={"format": "mhba", "counts": counts,
                                                                         "path": str(as_location(dest).path)})
    return counts


def is_bank_archive(path: Path | Location, fmt: str | None = None) -> bool:
    """The one test every way in (``/v1/import``, the CLI, the transfer page's jobs) asks: is this a
    whole-bank archive to restore? Named so (``fmt`` "mhba"), or, with no format named, detected so by the
    same detector every archive goes through (``registry.detect_format``)."""
    if fmt:
        return fmt == WHOLE_BANK
    try:
        return detect_format(as_location(path)) == WHOLE_BANK
    except (ValueError, OSError):
        return False


def max_line_bytes() -> int:
    return int(getattr(django_settings, "MEMORYHUB_BANK_ARCHIVE_MAX_LINE_BYTES", 16 * 1024 * 1024))


def _lines(path: Path | Location, cap: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """The archive's lines as objects; at most ``cap`` bytes read (decompressed), no line longer than
    ``max_line_bytes()`` ever held: past either the restore stops with an error naming the line."""
    longest = max_line_bytes()
    read = 0
    with open_archive_bytes(path, cap) as fp:
        for number, raw in bounded_lines(fp, longest):
            if raw is None:
                raise Unprocessable(f"line {number} of {path.name} is longer than {longest} bytes; "
                                    "a whole-bank archive's lines are never that long")
            read += len(raw)
            if read > cap:
                raise ArchiveTooLarge(f"{path.name} holds more than {cap} bytes; refusing to read on")
            try:
                data = json.loads(raw)
            except ValueError as exc:
                raise Unprocessable(f"line {number} of {path.name} is not valid JSON: {exc}") from None
            if not isinstance(data, dict):
                raise Unprocessable(f"line {number} of {path.name} is not an object")
            yield number, data


def _value(field: models.Field, value: Any) -> Any:
    if value is not None and isinstance(field, models.DateTimeField) and isinstance(value, str):
        return parse_iso(value)
    return value


# What a row the archive describes wrongly raises on its way in: a 422 naming its line, never a 500.
UNRESTORABLE = (DatabaseError, ValidationError, ValueError, TypeError)


def _reason(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [exc.__class__.__name__])[0][:300]


class _Loader:
    """Builds rows of one table a batch at a time, turning public ids back into this database's keys."""

    def __init__(self, bank: Bank, name: str) -> None:
        self.bank, self.name = bank, name
        self.keys: dict[type[models.Model], dict[str, int]] = {}
        # Rows waiting to be written, each with the archive line it came from.
        self.pending: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        self.counts: dict[str, int] = {}

    def key(self, model: type[models.Model], public_id: str | None) -> int | None:
        if public_id is None:
            return None
        if model not in self.keys:
            fields: dict[type[models.Model], str] = {Memory: "memory_id", Entity: "entity_id",
                                                     Observation: "observation_id", MentalModel: "model_id"}
            field = fields[model]
            self.keys[model] = dict(_bank_rows(self.bank, model).values_list(field, "pk"))
        return self.keys[model].get(public_id)

    def add(self, kind: str, row: Any, number: int) -> None:
        if not isinstance(row, dict):
            raise Unprocessable(f"line {number} of {self.name}: the {kind} row is not an object")
        self.pending.setdefault(kind, []).append((number, row))
        if len(self.pending[kind]) >= BATCH:
            self.flush(kind)

    def flush(self, kind: str) -> None:
        """Write a table's pending rows in one statement; if the database (or a value) refuses them, find
        the first line it refuses, each row on its own savepoint, and name it (the restore then rolls back)."""
        rows = self.pending.pop(kind, [])
        if not rows:
            return
        try:
            with transaction.atomic():
                self._write(kind, [row for _, row in rows])
        except UNRESTORABLE:
            for number, row in rows:
                try:
                    with transaction.atomic():
                        self._write(kind, [row])
                except UNRESTORABLE as exc:
                    raise Unprocessable(f"line {number} of {self.name}: the {kind} row cannot be restored: "
                                        f"{_reason(exc)}") from None
            raise
        self.counts[kind] = self.counts.get(kind, 0) + len(rows)

    def _write(self, kind: str, rows: list[dict[str, Any]]) -> None:
        model, refs = KINDS[kind]
        fields = _columns(model)
        stamped = [f for f in fields if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)]
        now = timezone.now()
        objects = []
        for row in rows:
            values = {f.attname: _value(f, row.get(f.attname)) for f in fields if f.attname in row}
            for attname, (target, _) in refs.items():
                if attname == "merged_into_id":
                    values[attname] = None  # set after every memory exists (it may point forward)
                else:
                    values[attname] = self.key(target, values.get(attname))
            if any(f.attname == "bank_id" for f in model._meta.concrete_fields):
                values["bank_id"] = self.bank.pk
            for f in stamped:
                # The archive's own time when it has one; a row from an older archive gets now.
                values[f.attname] = values.get(f.attname) or now
            objects.append(model(**values))
        _insert_raw(model, objects)
        self.keys.pop(model, None)


def _insert_raw(model: type[models.Model], objects: list[models.Model]) -> None:
    """One multi-row INSERT per slice, written as they are ("raw", as fixtures load): Django's auto_now would
    stamp every row with the restore's time, and writing the archive's times back with an UPDATE afterwards
    would rewrite every row, and every index entry (the vector index's too), a second time."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key and not isinstance(f, models.GeneratedField)]
    # PostgreSQL takes at most 65535 parameters a statement.
    step = max(1, min(len(objects), 60000 // max(1, len(fields))))
    manager = model._default_manager
    for i in range(0, len(objects), step):
        chunk = objects[i:i + step]
        rows = manager._insert(chunk, fields=fields, returning_fields=[model._meta.pk], raw=True,  # type: ignore[attr-defined]
                               using=manager.db)
        for obj, row in zip(chunk, rows, strict=True):
            obj.pk = row[0]


class _DryRun(Exception):
    """Rolls a preview's restore back once every row was written and counted."""


def bank_archive_import(*, bank: Bank, path: Path | Location, actor: str, max_bytes: int,
                        progress: Callable[[int], None] | None = None, dry_run: bool = False) -> dict[str, int]:
    """Restore a whole-bank archive into ``bank``, which must hold nothing yet (a restore is exact or refused).

    Reads at most ``max_bytes`` (decompressed; ``ArchiveTooLarge`` past it, nothing restored).
    ``progress(lines)`` every ``BATCH`` lines: it must not use the database (it runs inside the
    restore's transaction; a job's note does not). A row the database refuses is a 422 naming its line.
    ``dry_run`` restores every row and rolls back: a preview counts exactly what the restore will."""
    if Memory.objects.filter(bank=bank).exists() or MentalModel.objects.filter(bank=bank).exists():
        raise Conflict(f"bank {bank.bank_id} is not empty; a whole-bank archive restores into an empty bank")
    where = as_location(path)
    loader = _Loader(bank, where.name)
    try:
        with transaction.atomic():
            if bank.is_never_written and dry_run:
                # A preview of a restore into a bank not made yet: made here, and rolled back with the rows.
                from banks.services.banks import bank_create

                loader.bank = bank_create(bank_id=bank.bank_id, actor=actor, get_existing=True)
            _restore(loader, where, actor, max_bytes, progress)
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass
    return loader.counts


def _restore(loader: _Loader, path: Location, actor: str, max_bytes: int,
             progress: Callable[[int], None] | None) -> None:
    bank = loader.bank
    merged: list[tuple[str, str]] = []
    audit_record(actor=actor, action="bank.import.start", bank=bank, details={"format": "mhba",
                                                                              "path": str(path.path)})
    order = [kind for kind, _, _ in TABLES]
    current = 0
    for number, data in _lines(path, max_bytes):
        if progress is not None and number % BATCH == 0:
            progress(number)
        if number == 1:
            if data.get("mhba_version") != MHBA_VERSION:
                raise Unprocessable(f"{path.name} is not a version {MHBA_VERSION} whole-bank archive")
            continue
        kind, row = data.get("_mhba"), None
        if kind == "bank":
            _settings(bank, data.get("row"), number, path.name)
            continue
        if kind is None and "id" in data and "text" in data:
            extra = data.get("_mhba_row", {})
            if not isinstance(extra, dict):
                raise Unprocessable(f"line {number} of {path.name}: _mhba_row is not an object")
            kind, row = "memory", {**extra, "memory_id": data["id"], "text": data["text"]}
        elif isinstance(kind, str) and kind in KINDS:
            row = data.get("row")
        else:
            raise Unprocessable(f"line {number} of {path.name}: unknown record kind {kind!r}")
        if kind == "memory" and isinstance(row, dict) and row.get("merged_into_id"):
            merged.append((str(row.get("memory_id")), str(row["merged_into_id"])))
        position = order.index(kind)
        # A table is complete once a later one starts: write what is pending before its children need it.
        while current < position:
            loader.flush(order[current])
            current += 1
        loader.add(kind, row, number)
    for kind in order:
        loader.flush(kind)
    # One statement for every merge of the bank, not one per merged memory.
    rows_merged_into_set(bank.pk, merged)
    # The counters are derived from the mentions restored, not taken on the archive's word.
    mentions_recount(bank.pk)
    audit_record(actor=actor, action="bank.import", bank=bank, details={"format": "mhba", "counts": loader.counts})


def _settings(bank: Bank, row: Any, number: int, name: str) -> None:
    if not isinstance(row, dict):
        raise Unprocessable(f"line {number} of {name}: the bank row is not an object")
    try:
        with transaction.atomic():
            Bank.objects.filter(pk=bank.pk).update(**{k: v for k, v in row.items() if k in SETTINGS})
    except UNRESTORABLE as exc:
        raise Unprocessable(f"line {number} of {name}: the bank's settings cannot be restored: {_reason(exc)}") from None
