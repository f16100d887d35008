"""Whole-bank archives: a bank moved to an empty bank comes back row by row; Astrocyte still reads the memories."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from banks.models import Bank, EntityLink, Memory, MemoryLink
from banks.services.directives import directive_create
from banks.services.holds import hold_set
from banks.services.memories import memory_retain
from banks.services.memory_archiving import memory_archive
from banks.services.mental_models import mental_model_create, mental_model_refresh
from banks.services.merge import memory_merge
from banks.services.observations import observation_create
from portability.services.bank_archive import TABLES, _dump_rows, bank_archive_export, bank_archive_import

pytestmark = pytest.mark.django_db


def rich_bank(bank: Bank) -> None:
    a = memory_retain(bank=bank, text="Marie Curie worked in Paris", actor="t", tags=["science"],
                      metadata={"k": 1}).memory
    b = memory_retain(bank=bank, text="Pierre Curie taught at the Sorbonne", actor="t").memory
    c = memory_retain(bank=bank, text="Radium glows in the dark", actor="t").memory
    d = memory_retain(bank=bank, text="Radium is a metal found in pitchblende ore", actor="t").memory
    memory_merge(bank=bank, memory_ids=[c.memory_id, d.memory_id], actor="t", reason="same fact")
    memory_archive(memory=b, actor="t")
    MemoryLink.objects.create(bank=bank, source=a, target=b, link_type="related", metadata={"why": "family"})
    ents = list(bank.entities.order_by("pk")[:2])
    if len(ents) == 2:
        EntityLink.objects.create(bank=bank, entity_a=ents[0], entity_b=ents[1], link_type="alias_of")
    observation_create(bank=bank, text="The Curies worked on radioactivity", actor="t",
                       source_ids=[a.memory_id, b.memory_id])
    model = mental_model_create(bank=bank, model_id="curies", title="The Curies", actor="t", content="v1")
    mental_model_refresh(model=model, actor="t", content="v2")
    directive_create(bank=bank, rule_text="Always cite sources", actor="t")
    hold_set(bank=bank, hold_id="case-1", reason="litigation", set_by="legal", actor="t")


def table(bank: Bank, kind: str) -> list[dict]:
    return sorted(json.dumps(row, sort_keys=True) for row in _dump_rows(bank, kind))


def test_a_bank_moves_to_an_empty_bank_row_by_row(bank, make_bank, tmp_path):
    rich_bank(bank)
    dest = tmp_path / "alice.mhba.jsonl.gz"
    counts = bank_archive_export(bank=bank, dest=dest, actor="t")
    assert counts["memory"] == Memory.objects.filter(bank=bank).count() >= 4 and counts["mental_model_revision"] >= 3 and counts["legal_hold"] == 1
    assert Memory.objects.filter(bank=bank, merged_into__isnull=False).exists()
    assert counts["memory_link"] >= 1 and counts["observation_evidence"] == 2 and counts["memory_entity"] >= 1
    copy = make_bank("copy")
    restored = bank_archive_import(bank=copy, path=dest, actor="t", max_bytes=1 << 30)
    for kind, _, _ in TABLES:
        assert table(copy, kind) == table(bank, kind), kind
        assert restored.get(kind, 0) == counts[kind], kind
    assert Memory.objects.filter(bank=copy, merged_into__isnull=False).count() == Memory.objects.filter(
        bank=bank, merged_into__isnull=False).count()


def test_astrocyte_reads_the_memories_and_skips_the_rest(bank, tmp_path):
    from astrocyte.portability import iter_ama_memories

    rich_bank(bank)
    dest = tmp_path / "alice.mhba.jsonl"
    bank_archive_export(bank=bank, dest=dest, actor="t")
    memories = iter_ama_memories(dest, allow_uncontained=True)
    # Live memories only: an archived (or merged, or forgotten) one would come back live in any AMA reader.
    assert sorted(m.text for m in memories) == sorted(Memory.objects.filter(bank=bank).live().values_list(
        "text", flat=True))


def test_commands_export_full_and_import_it(bank, tmp_path):
    rich_bank(bank)
    out = StringIO()
    call_command("memory_export", "--bank", "user-alice", "--output", str(tmp_path / "a.mhba.jsonl"), "--full",
                 stdout=out)
    assert "memory " in out.getvalue()
    call_command("memory_import", "--bank", "restored", "--create-bank", "--input", str(tmp_path / "a.mhba.jsonl"),
                 stdout=out)
    copy = Bank.objects.get(bank_id="restored")
    assert table(copy, "mental_model_revision") == table(bank, "mental_model_revision")


def test_full_export_and_restore_over_http(api, make_bank, settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    rich_bank(Bank.objects.get(bank_id="user-alice"))
    response = api.post("/v1/export", {"bank_id": "user-alice", "path": str(tmp_path / "a.mhba.jsonl"), "full": True})
    assert response.status_code == 200 and response.json()["counts"]["legal_hold"] == 1
    again = api.post("/v1/import", {"bank_id": "user-alice", "path": str(tmp_path / "a.mhba.jsonl")})
    assert again.status_code == 409  # a restore never mixes into a bank that holds memories


def test_the_whole_bank_downloads_from_the_transfer_page(admin_client, bank, tmp_path):
    rich_bank(bank)
    response = admin_client.get("/banks/user-alice/transfer/download?full=1")
    assert response.status_code == 200 and "mhba.jsonl" in response["Content-Disposition"]
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert json.loads(lines[0])["mhba_version"] == 1
    assert any(json.loads(line).get("_mhba") == "mental_model_revision" for line in lines)


def test_a_restored_bank_counts_its_mentions_from_its_rows(bank, make_bank, tmp_path):
    from tests.factories import make_memory, row_invariant_breaks

    make_memory(bank, "Ada Lovelace wrote the first program.", entities=["Ada Lovelace"])
    make_memory(bank, "Ada Lovelace worked with Babbage.", entities=["Ada Lovelace", "Charles Babbage"])
    dest = tmp_path / "alice.mhba.jsonl"
    bank_archive_export(bank=bank, dest=dest, actor="t")
    # An archive whose counts disagree with its own mentions (edited, or written by a drifted bank).
    lines = [json.loads(line) for line in dest.read_text().splitlines()]
    for line in lines:
        if isinstance(line, dict) and "mention_count" in json.dumps(line):
            for value in line.values():
                if isinstance(value, dict) and "mention_count" in value:
                    value["mention_count"] = 99
    dest.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    copy = make_bank("copy")
    bank_archive_import(bank=copy, path=dest, actor="t", max_bytes=1 << 30)
    assert copy.entities.get(entity_id="ada lovelace").mention_count == 2
    assert row_invariant_breaks() == {}
