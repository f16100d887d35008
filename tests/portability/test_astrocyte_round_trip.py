"""A bank goes to Astrocyte (its own library) and back, keeping every field Astrocyte can hold."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from banks.models import Memory
from banks.services.memories import memory_retain
from portability.formats.registry import open_archive
from portability.services import archive_export, archive_import

pytestmark = pytest.mark.django_db


def test_memoryhub_to_astrocyte_and_back(bank, make_bank, tmp_path):
    from astrocyte import Astrocyte

    originals = [
        ("Inès prefers oat milk in her coffee.", ["food"], {"customer_id": "c-1"}, datetime(2026, 3, 1, tzinfo=UTC)),
        ("東京の定例会議は火曜日に始まる。", ["日本", "meetings"], {"room": 4}, None),
        ("Deploys are frozen on Fridays after 15:00.", ["ops"], {}, datetime(2025, 12, 24, 9, tzinfo=UTC)),
    ]
    for text, tags, metadata, occurred in originals:
        memory_retain(bank=bank, text=text, actor="test", tags=tags, metadata=metadata, occurred_at=occurred,
                      source="curation")
    ours = tmp_path / "ours.ama.jsonl"
    assert archive_export(bank=bank, dest=ours, actor="test").exported_count == 3

    brain = Astrocyte.from_config_dict({"provider_tier": "storage", "vector_store": "in_memory",
                                        "llm_provider": "mock"})
    theirs = tmp_path / "theirs.ama.jsonl"

    async def through_astrocyte() -> tuple[object, int]:
        result = await brain.import_bank("copy", str(ours), allowed_roots=[str(tmp_path)])
        exported = await brain.export_bank("copy", str(theirs), allowed_roots=[str(tmp_path)])
        return result, exported

    result, exported = asyncio.run(through_astrocyte())
    assert (result.imported, result.skipped, result.errors) == (3, 0, 0) and exported == 3

    back = make_bank("back")
    report = archive_import(bank=back, records=open_archive(theirs)[2], actor="test")
    assert report.imported == 3 and report.invalid == 0
    kept = ("text", "tags", "metadata", "occurred_at")  # what Astrocyte keeps through import and export

    def fields(row: Memory) -> dict[str, object]:
        values = {name: getattr(row, name) for name in kept}
        values["metadata"] = {k: v for k, v in row.metadata.items() if not k.startswith("_")}
        return values

    sent = sorted((fields(m) for m in Memory.objects.filter(bank=bank)), key=lambda f: str(f["text"]))
    returned = sorted((fields(m) for m in Memory.objects.filter(bank=back)), key=lambda f: str(f["text"]))
    assert returned == sent
    assert sent == sorted(({"text": t, "tags": g, "metadata": m, "occurred_at": o} for t, g, m, o in originals),
                          key=lambda f: str(f["text"]))
    # Astrocyte ignores fact_type on import and writes its own: every record comes back as it says.
    their_lines = [json.loads(line) for line in theirs.read_text(encoding="utf-8").splitlines()[1:] if line]
    assert sorted((r["text"], r["fact_type"]) for r in their_lines) == sorted(
        Memory.objects.filter(bank=back).values_list("text", "fact_type"))
