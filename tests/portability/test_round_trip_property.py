"""Property: any bank, with every field and awkward text (long, CR LF, control characters other than NUL,
emoji, right-to-left), goes out in each format and back into an empty bank with everything the format
claims to carry equal (``retained_at`` included wherever the format has a field for it).

The example count is kept small (the suite runs on a shared two-core machine); the strategies put the
awkward cases up front so few examples reach them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import transaction
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from banks.models import Bank
from banks.services.banks import bank_create
from portability.formats.registry import open_archive
from portability.records import EntityRecord, LinkRecord, MemoryRecord
from portability.services import archive_import
from portability.services.bank_archive import bank_archive_export, bank_archive_import
from portability.services.exporter import archive_export_as
from tests.portability.test_round_trip import ALL, _snapshot

CLAIMS = {fmt: ALL | {"retained_at"} for fmt in ("ama", "csv", "markdown", "obsidian", "amplihack", "agentos_json",
                                                 "mhba")}
FILES = {"ama": "out.ama.jsonl.gz", "csv": "out.csv.gz", "markdown": "notes", "obsidian": "notes",
         "amplihack": "out.json.gz", "agentos_json": "brain.json.gz"}

AWKWARD = st.sampled_from(["\r\n", "\r", "\n", "\t", "\x01", "\x1b", "\x7f", "\u0085", "\u2028", "🚀", "👩‍👩‍👧",
                           "مرحبا", "\u202e", "\u200f", "שלום", "é", "\"", "'", ",", "=", "+", "-", "@", "#",
                           "---", ":", "{", "}", "[", "]", "\\", " ", "  "])
WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12)
PIECES = st.lists(st.one_of(AWKWARD, WORDS), min_size=1, max_size=12).map("".join)
LONG = st.sampled_from(["", "long text " * 14_000])  # 140,000 characters: past CSV's own cell limit
TIMES = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC))
NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyzéß 🚀", min_size=1, max_size=10).map(str.strip).filter(bool)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53),
                    st.floats(allow_nan=False, allow_infinity=False, width=64), PIECES)
METADATA = st.dictionaries(NAMES.map(lambda k: f"k{k}"), st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES.map(lambda k: f"k{k}"), inner,
                                                                        max_size=3), max_leaves=6), max_size=4)


@st.composite
def banks(draw: st.DrawFn) -> list[MemoryRecord]:
    count = draw(st.integers(1, 4))
    pool = [EntityRecord(f"{name} {i}", draw(st.sampled_from(["PERSON", "ORG", "OTHER"])),
                         draw(st.lists(NAMES, max_size=2, unique=True)))
            for i, name in enumerate(draw(st.lists(NAMES, min_size=1, max_size=3)))]
    records = []
    for i in range(count):
        text = f"m{i} " + draw(PIECES) + draw(LONG) + draw(st.sampled_from(["", "\r\n", " ", "\n\n"]))
        records.append(MemoryRecord(
            memory_id=f"mem-{i}-" + draw(st.text(alphabet="abc-_.:", max_size=4)), text=text,
            fact_type=draw(st.sampled_from(["world", "experience", "observation"])),
            tags=draw(st.lists(NAMES.map(lambda t: f"t{t}"), max_size=3, unique=True)),
            metadata=draw(METADATA), occurred_at=draw(st.none() | TIMES), created_at=draw(TIMES),
            retained_at=draw(TIMES), source=draw(st.none() | PIECES.map(lambda s: f"s{s}"[:200])),
            memory_layer=draw(st.sampled_from([None, "semantic", "episodic", "fact"])),
            entities=draw(st.lists(st.sampled_from(pool), max_size=2, unique_by=lambda e: e.name))))
    for i, record in enumerate(records):
        targets = draw(st.lists(st.sampled_from(range(count)), max_size=2, unique=True))
        record.links = [LinkRecord(records[t].memory_id or "", draw(st.sampled_from(["similar_to", "supersedes"])),
                                   draw(st.sampled_from([1.0, 0.5, 0.75, 0.125])),
                                   draw(st.dictionaries(st.just("why"), NAMES, max_size=1)))
                        for t in targets if t != i]
    return records


class _Rollback(Exception):
    pass


def _round_trip(fmt: str, records: list[MemoryRecord], folder) -> None:  # noqa: ANN001
    source = bank_create(bank_id="prop-source", actor="t")
    report = archive_import(bank=source, records=lambda: iter(records), actor="t", extract_entities=False)
    assert (report.imported, report.invalid) == (len(records), 0), report.errors
    target = bank_create(bank_id="prop-target", actor="t")
    if fmt == "mhba":
        bank_archive_export(bank=source, dest=folder / "bank.mhba.jsonl.gz", actor="t")
        bank_archive_import(bank=target, path=folder / "bank.mhba.jsonl.gz", actor="t", max_bytes=10**9)
    else:
        dest = folder / FILES[fmt]
        archive_export_as(bank=source, dest=dest, fmt="markdown" if fmt == "obsidian" else fmt, actor="t")
        back = archive_import(bank=target, records=open_archive(dest, fmt if fmt == "obsidian" else None)[2],
                              actor="t", extract_entities=False)
        assert (back.imported, back.invalid, back.unresolved_links) == (len(records), 0, 0), back.errors
    before, after = _snapshot(source), _snapshot(target)
    assert set(after) == set(before)
    lost = {(memory_id, name): (before[memory_id][name], after[memory_id][name])
            for memory_id in before for name in CLAIMS[fmt] if before[memory_id][name] != after[memory_id][name]}
    assert not lost, f"{fmt} lost fields it claims to carry: {lost}"


@pytest.mark.django_db(transaction=False)
@pytest.mark.parametrize("fmt", sorted(CLAIMS))
def test_every_format_round_trips_any_bank(fmt, tmp_path_factory):
    @settings(max_examples=6, deadline=None, derandomize=True, database=None, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture])
    @given(records=banks())
    def check(records: list[MemoryRecord]) -> None:
        folder = tmp_path_factory.mktemp(fmt)
        try:
            with transaction.atomic():
                _round_trip(fmt, records, folder)
                raise _Rollback  # each example starts from an empty database
        except _Rollback:
            pass
        assert not Bank.objects.filter(bank_id__startswith="prop-").exists()

    check()
