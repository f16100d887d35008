"""Lines written by PostgreSQL are byte for byte the lines the record path writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from banks.content import content_hash
from banks.models import Entity, Memory, MemoryEntity, MemoryLink
from portability.formats.ama import dumps_line, record_to_line
from portability.services.export_lines import memory_lines
from portability.services.exporter import _records

pytestmark = pytest.mark.django_db

TEXTS = [
    "plain text",
    'quotes " and back\\slashes \\n literally',
    "tab\there, newline\nthere, carriage\rreturn, bell\x07, escape\x1b, del\x7f",
    "unicode: café, 日本語, emoji 🧠, line sep \u2028 para sep \u2029, nbsp \u00a0",
    "formfeed\f backspace\b unit sep\x1f",
    "/ slash and <html> & ampersand",
]
METADATA = [
    {},
    {"n": 1, "big": 12345678901234567890, "neg": -3, "ok": True, "no": False, "none": None},
    {"score": 0.87, "tiny": 1.5e-07, "round": 1.0, "nested": {"z": [1, 2.5, "x"], "a": {}}},
    {"unicode": "é\n\"q\"", "list": [], "emptystr": "", "zkey": 1, "a": 2, "longer_key": 3},
    {"b": 1},
    {"x": "1.5 as text only"},
]


@pytest.fixture
def varied_bank(make_bank):
    bank = make_bank("export-lines")
    base = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    rows = []
    for i in range(36):
        text = f"{TEXTS[i % len(TEXTS)]} #{i}"
        rows.append(Memory.objects.create(
            bank=bank, memory_id=f"mem-{i}" if i % 5 else f'weird "id" {i} é', text=text,
            fact_type=["world", "experience", ""][i % 3], memory_layer=[None, "", "episodic"][i % 3],
            tags=[[], ["a"], ["b", "ç", "a"]][i % 3], metadata=METADATA[i % len(METADATA)],
            occurred_at=None if i % 2 else base + timedelta(microseconds=i * 1001),
            created_at=base - timedelta(days=i, microseconds=0 if i % 4 else 123456),
            retained_at=base + timedelta(seconds=i), source=[None, "", "slack:#général"][i % 3],
            content_hash=content_hash(text), archived_at=base if i == 7 else None,
        ))
    alice = Entity.objects.create(bank=bank, entity_id="e1", name='Alice "A"', entity_type="PERSON",
                                  aliases=["Al", "アリス"])
    acme = Entity.objects.create(bank=bank, entity_id="e2", name="Acme", entity_type="ORG")
    for memory in rows[::4]:
        MemoryEntity.objects.create(bank=bank, memory=memory, entity=acme)
        MemoryEntity.objects.create(bank=bank, memory=memory, entity=alice)
    MemoryLink.objects.create(bank=bank, source=rows[1], target=rows[2], link_type="related", confidence=1.0)
    MemoryLink.objects.create(bank=bank, source=rows[1], target=rows[3], link_type="caused_by", confidence=0.25,
                              metadata={"why": "ça", "w": 0.5})
    MemoryLink.objects.create(bank=bank, source=rows[9], target=rows[7], link_type="supersedes",
                              confidence=1e-05)
    return bank


@pytest.mark.parametrize("include_entities", [True, False])
@pytest.mark.parametrize("include_archived", [False, True])
def test_sql_lines_match_the_record_path(varied_bank, include_entities, include_archived):
    expected = [dumps_line(record_to_line(r, include_embeddings=False, include_entities=include_entities))
                for r in _records(varied_bank, include_embeddings=False, include_entities=include_entities,
                                  include_observations=False, include_archived=include_archived)]
    got = list(memory_lines(varied_bank, include_entities=include_entities, include_archived=include_archived))
    assert len(got) == (36 if include_archived else 35)
    for want, line in zip(expected, got, strict=True):
        assert line == want
