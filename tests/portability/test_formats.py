"""Every shared fixture through its reader and then into a bank, with the results MemoryHub should give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from banks.models import Memory, MemoryLink
from portability.formats.registry import detect_format, open_archive
from portability.records import MemoryRecord, RecordError
from portability.services import archive_import
from tests.portability.fixtures import FIXTURES


def read(path: Path, fmt: str | None = None):
    detected, header, records = open_archive(path, fmt)
    items = list(records())
    return detected, header, [i for i in items if isinstance(i, MemoryRecord)], \
        [i for i in items if isinstance(i, RecordError)]


@pytest.mark.parametrize(("name", "fmt"), [
    ("sample.ama.jsonl", "ama"), ("amplihack_hierarchical.json", "amplihack"),
    ("agentos_traces.json", "agentos_json"), ("agentos_traces.ndjson", "agentos_ndjson"),
    ("markdown_export", "markdown"), ("obsidian_vault", "obsidian"),
    ("chatgpt_conversations.json", "chatgpt"), ("memories.csv", "csv"),
])
def test_every_fixture_is_detected(name, fmt):
    assert detect_format(FIXTURES / name) == fmt


def test_amplihack_nodes_and_edges():
    _, header, records, errors = read(FIXTURES / "amplihack_hierarchical.json")
    assert (len(records), errors) == (8, [])
    assert header.extra["agent_name"] == "incident-memory-agent"
    kinds = {r.metadata["amplihack"]["node_kind"] for r in records}
    assert kinds == {"semantic", "episodic"}
    assert all(r.fact_type == "experience" for r in records if r.metadata["amplihack"]["node_kind"] == "episodic")
    assert sum(len(r.links) for r in records) == 7
    first = next(r for r in records if r.memory_id.startswith("3f6b2c1e"))
    assert first.occurred_at.isoformat() == "2026-03-02T00:00:00+00:00" and first.entities[0].name == "Postgres"
    epoch = next(r for r in records if r.memory_id.startswith("c04e5f6a"))
    assert epoch.created_at.isoformat() == "2026-03-02T10:00:00+00:00"


def test_amplihack_size_cap(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes((FIXTURES / "amplihack_hierarchical.json").read_bytes())
    with pytest.raises(ValueError, match="byte limit"):
        open_archive(path, "amplihack", max_bytes=100)


def test_agentos_json_real_shape():
    _, _, records, errors = read(FIXTURES / "agentos_traces.json")
    traces = [r for r in records if r.memory_id.startswith("mt_")]
    assert len(traces) == 7 and errors == []
    assert [r.text for r in traces if r.forgotten] == ["Old address: 12 Rua das Flores (moved out in 2025)."]
    first = traces[0]
    assert first.tags == ["preference", "language"] and first.metadata["agentos"]["type"] == "semantic"
    assert first.embedding is not None and len(first.embedding) == 4
    assert {e.name for e in first.entities} == {"TypeScript", "Python"}
    exchanges = [r for r in records if str(r.position).startswith("messages/")]
    assert len(exchanges) == 1 and "[assistant]: Open Settings" in exchanges[0].text


def test_agentos_ndjson_documented_shape_all_eight():
    _, _, records, errors = read(FIXTURES / "agentos_traces.ndjson")
    assert (len(records), errors) == (8, [])
    assert records[0].tags == ["preference", "language"] and records[0].created_at.year == 2026
    assert any(r.metadata["agentos"].get("x_unknown_field") is not None for r in records)


def test_markdown_directory():
    _, _, records, errors = read(FIXTURES / "markdown_export")
    assert len(records) == 6 and len(errors) == 1 and errors[0].reason == "note has no body"
    iso_note = next(r for r in records if r.metadata.get("agentos", {}).get("type") == "prospective")
    assert iso_note.created_at is not None  # the ISO createdAt is kept, not replaced by "now"
    loose = next(r for r in records if "loose-note" in r.metadata["markdown"]["path"])
    assert loose.created_at is None and loose.memory_id is None


def test_obsidian_vault_tags_links_and_skips():
    _, _, records, errors = read(FIXTURES / "obsidian_vault")
    assert len(records) == 7 - len(errors)
    assert all(".obsidian" not in r.metadata["markdown"]["path"] for r in records)
    tags = {t for r in records for t in r.tags}
    assert {"café", "team/billing", "work/standup"} <= tags
    assert not tags & {"caf", "install", "ff8800", "also-not-a-tag", "Failover"}
    targets = {link["target"] for r in records for link in r.metadata["obsidian"]["links"]}
    assert {"Pager Duty Policy", "People/Priya Raman"} <= targets
    assert any(r.metadata["obsidian"]["embeds"] for r in records)


def test_obsidian_skips_symlinks_out_of_the_vault(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("hello #tag")
    (tmp_path / "secret.md").write_text("secret")
    (vault / "link.md").symlink_to(tmp_path / "secret.md")
    (vault / "dir").symlink_to(tmp_path)
    _, _, records, _ = read(vault, "obsidian")
    assert [r.text for r in records] == ["hello #tag"]


def test_chatgpt_current_branch_and_do_not_remember():
    _, _, records, errors = read(FIXTURES / "chatgpt_conversations.json")
    by_conversation: dict[str, list[MemoryRecord]] = {}
    for r in records:
        by_conversation.setdefault(r.metadata["chatgpt"]["conversation_id"], []).append(r)
    assert sorted(len(v) for v in by_conversation.values()) == [2, 2]
    assert any("do-not-remember" in e.reason for e in errors)
    assert all(r.text.startswith("[user]: ") and "\n[assistant]: " in r.text for r in records)


def test_csv_quirks():
    _, _, records, errors = read(FIXTURES / "memories.csv")
    assert (len(records), len(errors)) == (9, 2)
    assert sorted(e.reason.split(":")[0] for e in errors) == ["empty content", "metadata is not valid JSON"]
    by_id = {r.memory_id: r for r in records}
    assert by_id["csv-001"].tags == ["preference", "food"] and by_id["csv-001"].metadata["csv"] == {
        "importance": "0.8"} and by_id["csv-001"].source == "crm-notes"
    assert by_id["csv-002"].text == 'She said "use the blue key, not the red one", then left.'
    assert by_id["csv-002"].tags == ["quotes", "keys"]
    assert "\n" in by_id["csv-003"].text


def test_csv_without_content_column_is_refused(tmp_path):
    (tmp_path / "x.csv").write_text("id,text\n1,hello\n")
    with pytest.raises(ValueError, match='no "content" column'):
        open_archive(tmp_path / "x.csv")


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "imported", "duplicates", "invalid"), [
    ("amplihack_hierarchical.json", 7, 1, 0),
    # The conversation's exchange repeats a trace imported from ChatGPT earlier: a duplicate.
    ("agentos_traces.json", 6, 2, 0),
    ("agentos_traces.ndjson", 7, 1, 0),
    ("markdown_export", 5, 1, 1),
    ("obsidian_vault", 5, 1, 1),
    ("chatgpt_conversations.json", 4, 0, 0),  # the do-not-remember conversation is skipped, not invalid
    ("memories.csv", 8, 1, 2),
])
def test_fixture_imports_into_a_bank(bank, name, imported, duplicates, invalid):
    _, _, records = open_archive(FIXTURES / name)
    report = archive_import(bank=bank, records=records, actor="test")
    assert (report.imported, report.duplicates, report.invalid) == (imported, duplicates, invalid), report.errors
    again = archive_import(bank=bank, records=open_archive(FIXTURES / name)[2], actor="test")
    assert again.imported == 0


@pytest.mark.django_db
def test_amplihack_round_trip_keeps_edges(bank, make_bank, tmp_path):
    from portability.formats.amplihack import write_amplihack
    from portability.services.exporter import _records

    archive_import(bank=bank, records=open_archive(FIXTURES / "amplihack_hierarchical.json")[2], actor="test")
    assert MemoryLink.objects.filter(bank=bank).count() == 6  # the 7th edge points at the duplicate node
    _, header, _ = open_archive(FIXTURES / "amplihack_hierarchical.json")
    count = write_amplihack(tmp_path / "out.json", header, _records(
        bank, include_embeddings=False, include_entities=True, include_observations=False, include_archived=False))
    data = json.loads((tmp_path / "out.json").read_text())
    assert count == 7 and data["statistics"]["semantic_node_count"] + data["statistics"]["episodic_node_count"] == 7
    copy = make_bank("copy")
    report = archive_import(bank=copy, records=open_archive(tmp_path / "out.json")[2], actor="test")
    assert report.imported == 7 and MemoryLink.objects.filter(bank=copy).count() == 6
    assert Memory.objects.filter(bank=copy, fact_type="experience").count() == Memory.objects.filter(
        bank=bank, fact_type="experience").count()
