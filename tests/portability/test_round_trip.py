"""Every writer, round trip: a bank with varied memories goes out in a format and back into a new bank,
and every field the format claims to hold must come back equal. A field a format cannot hold is named
here, so a writer that starts losing one fails instead of passing quietly."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from banks.models import Entity, EntityLink, Memory, MemoryLink
from portability.formats.registry import open_archive
from portability.records import EntityRecord, LinkRecord, MemoryRecord
from portability.services import archive_import
from portability.services.bank_archive import bank_archive_export, bank_archive_import
from portability.services.exporter import archive_export_as
from tests.portability.fixtures import bank_folder

ALL = frozenset({"text", "fact_type", "tags", "metadata", "occurred_at", "created_at", "source", "memory_layer",
                 "entities", "links"})
# What each format holds; anything else it may lose (and the test says so by leaving it out).
CLAIMS: dict[str, frozenset[str]] = {
    "ama": ALL,
    "mhba": ALL | {"retained_at", "entity_links"},
    "csv": ALL,
    "markdown": ALL,
    "obsidian": ALL,  # the Markdown export opened as an Obsidian vault
    "amplihack": ALL,
    "agentos_json": ALL,
}


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def _records() -> list[MemoryRecord]:
    return [
        MemoryRecord(
            memory_id="m-world", text="Release freeze starts 2026-04-20 for the Orion team, café included. "
                                      "See [[m-exp]] and #notatag-here.",
            fact_type="world", tags=["release", "ops/freeze", "ünïcode"],
            metadata={"priority": 2, "ratio": 0.25, "flag": True, "nothing": None, "nested": {"list": [1, "two"]},
                      "when": "2026-01-02", "emoji": "🚀"},
            occurred_at=_t("2026-04-01T09:00:00.123456+02:00"), created_at=_t("2026-03-30T08:15:00.000001+00:00"),
            source="slack:#ops", memory_layer="semantic",
            entities=[EntityRecord("Orion", "PROJECT", ["orion-team"]), EntityRecord("Łukasz Nowak", "PERSON")],
            links=[LinkRecord("m-exp", "supersedes", 0.75, {"reason": "newer plan"}),
                   LinkRecord("m-obs", "similar_to", 0.5)]),
        MemoryRecord(
            memory_id="m-exp", text="Rolled back deploy 512 after a 5xx spike.", fact_type="experience",
            tags=[], metadata={}, occurred_at=_t("2026-04-02T22:14:00+00:00"),
            created_at=_t("2026-04-02T22:20:00+00:00"), source="pagerduty", memory_layer=None,
            entities=[EntityRecord("deploy 512", "EVENT")], links=[LinkRecord("m-world", "derives_from", 1.0)]),
        MemoryRecord(
            memory_id="m-obs", text="Deploys on Fridays fail more often (3 of the last 4).", fact_type="observation",
            tags=["pattern"], metadata={"amplihack": {"note": "a key another format also uses"}},
            occurred_at=None, created_at=_t("2025-12-25T00:00:00+00:00"), source=None, memory_layer="observation",
            entities=[], links=[LinkRecord("m-exp", "mentions", 0.9, {"why": ["x", 1]})]),
        MemoryRecord(
            memory_id="m-plain", text="  A memory with nothing but text,\nindented, on two lines. \n",
            fact_type="world", created_at=_t("2026-01-01T00:00:00+00:00")),
    ]


def _snapshot(bank) -> dict[str, dict]:
    out = {}
    for memory in Memory.objects.filter(bank=bank).prefetch_related("entities", "links_out__target"):
        out[memory.memory_id] = {
            "text": memory.text, "fact_type": memory.fact_type, "tags": list(memory.tags),
            "metadata": memory.metadata, "occurred_at": memory.occurred_at, "created_at": memory.created_at,
            "retained_at": memory.retained_at, "source": memory.source, "memory_layer": memory.memory_layer,
            "entities": sorted((e.name, e.entity_type, tuple(e.aliases)) for e in memory.entities.all()),
            "links": sorted((link.target.memory_id, link.link_type, link.confidence, tuple(sorted(
                (link.metadata or {}).items(), key=str))) for link in memory.links_out.all()),
        }
    return out


def _entity_links(bank) -> set[tuple[str, str, str]]:
    return {(link.entity_a.name, link.link_type, link.entity_b.name)
            for link in EntityLink.objects.filter(bank=bank).select_related("entity_a", "entity_b")}


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", sorted(CLAIMS))
def test_every_writer_round_trips_what_it_claims(fmt, make_bank, tmp_path):
    source = make_bank("round-source")
    report = archive_import(bank=source, records=lambda: iter(_records()), actor="test", extract_entities=False)
    assert report.imported == 4 and report.links == 4, report.errors
    orion, lukasz = (Entity.objects.get(bank=source, entity_id=key) for key in ("orion", "łukasz nowak"))
    EntityLink.objects.create(bank=source, entity_a=orion, entity_b=lukasz, link_type="LED_BY", confidence=0.6)
    target = make_bank("round-target")
    if fmt == "mhba":
        bank_archive_export(bank=source, dest=tmp_path / "bank.mhba.jsonl.gz", actor="test")
        bank_archive_import(bank=target, path=tmp_path / "bank.mhba.jsonl.gz", actor="test", max_bytes=10**9)
    else:
        writer = "markdown" if fmt == "obsidian" else fmt
        dest = tmp_path / {"ama": "out.ama.jsonl", "csv": "out.csv", "markdown": "out", "amplihack": "out.json",
                                 "agentos_json": "brain.json"}[
            writer]
        archive_export_as(bank=source, dest=dest, fmt=writer, actor="test")
        detected, _, records = open_archive(dest, fmt if fmt == "obsidian" else None)
        assert detected == fmt
        back = archive_import(bank=target, records=records, actor="test", extract_entities=False)
        assert (back.imported, back.invalid, back.unresolved_links) == (4, 0, 0), back.errors
    before, after = _snapshot(source), _snapshot(target)
    assert set(after) == set(before)
    fields = CLAIMS[fmt] - {"entity_links"}
    lost = {(memory_id, name): (before[memory_id][name], after[memory_id][name])
            for memory_id in before for name in fields if before[memory_id][name] != after[memory_id][name]}
    assert not lost, f"{fmt} lost fields it claims to hold: {lost}"
    if "entity_links" in CLAIMS[fmt]:
        assert _entity_links(target) == _entity_links(source) == {("Orion", "LED_BY", "Łukasz Nowak")}
    assert MemoryLink.objects.filter(bank=target).count() == 4


@pytest.mark.django_db
@pytest.mark.parametrize(("fmt", "name"), [("csv", "out.csv"), ("markdown", "out-md"), ("amplihack", "out.json"),
                                           ("agentos_json", "brain.json")])
def test_every_writer_is_reachable_over_http_and_from_the_transfer_page(fmt, name, api, settings, tmp_path,
                                                                       django_user_model):
    from django.test import Client

    from banks.models import Bank, Job

    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    api.post("/v1/retain", {"bank_id": "user-alice", "content": "Alice Smith moved to Porto in May."})
    response = api.post("/v1/export", {"bank_id": "user-alice", "path": str(tmp_path / name), "format": fmt})
    assert response.status_code == 200, response.content
    written = bank_folder(tmp_path, "user-alice") / name
    assert response.json()["exported_count"] == 1 and written.exists() and not (tmp_path / name).exists()
    assert open_archive(written)[0] == ("markdown" if fmt == "markdown" else fmt)
    again = api.post("/v1/export", {"bank_id": "user-alice", "path": str(tmp_path / name), "format": fmt})
    assert again.status_code == 200, again.content  # a second export replaces the first, directory or file
    refused = api.post("/v1/export", {"bank_id": "user-alice", "path": str(tmp_path / "x"), "format": fmt,
                                      "full": True})
    assert refused.status_code == 422
    operator = Client()
    operator.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    assert f'<option value="{fmt}">' in operator.get("/banks/user-alice/transfer/").content.decode()
    operator.post("/banks/user-alice/transfer/start", {"kind": "export", "format": fmt, "root": str(tmp_path)})
    job = Job.objects.get(kind="export")
    assert job.params["format"] == fmt and job.params["path"].startswith(str(bank_folder(tmp_path, Bank.objects.get(
        bank_id="user-alice").bank_id) / "user-alice"))
    from portability.jobs import job_run

    job_run(job)  # what the worker runs
    job.refresh_from_db()
    assert job.state == "succeeded" and job.result["exported_count"] == 1, job.message
    assert open_archive(Path(job.params["path"]))[0] == ("markdown" if fmt == "markdown" else fmt)


@pytest.mark.django_db
def test_a_hand_broken_memoryhub_block_is_read_as_far_as_it_goes(bank, tmp_path):
    """Our blocks live in files people edit: wrong types anywhere must not sink the import."""
    import json as jsonlib

    garbage = {"entities": 5, "links": [{"target_id": "x", "confidence": "high", "metadata": 3},
                                        {"target_id": 7}], "metadata": "not an object", "created_at": [1],
               "occurred_at": "yesterday", "source": 9, "fact_type": 3}
    vault = tmp_path / "notes"
    vault.mkdir()
    (vault / "a.md").write_text("---\nid: a\nmemoryhub:\n  entities: 5\n  links: {x: 1}\n  metadata: [1]\n"
                                "  created_at: not a time\n---\nNote a.\n")
    (vault / "b.md").write_text("---\nid: b\nmemoryhub:\n  entities: [{name: E, aliases: 4}]\n"
                                "  links: [{target_id: a, confidence: high}]\n---\nNote b.\n")
    brain = tmp_path / "brain.json"
    brain.write_text(jsonlib.dumps({"traces": [{"id": "t1", "content": "Trace one.", "metadata": jsonlib.dumps(
        {"memoryhub": garbage})}]}))
    amp = tmp_path / "amp.json"
    amp.write_text(jsonlib.dumps({"agent_name": "x", "format_version": "1.1", "semantic_nodes": [
        {"memory_id": "s1", "concept": "", "content": "Node one.", "confidence": 0.8, "source_id": "", "tags": [],
         "metadata": {"memoryhub": {**garbage, "entities": [{"name": "E", "aliases": 4}]}}, "created_at": "",
         "entity_name": ""}], "episodic_nodes": [], "similar_to_edges": [], "derives_from_edges": [],
        "supersedes_edges": [], "transitioned_to_edges": []}))
    csv_file = tmp_path / "x.csv"
    csv_file.write_text('id,content,entities,links\nc1,Row one.,"[{""name"": ""E"", ""aliases"": 4}]",'
                        '"[{""target_id"": ""a"", ""link_type"": ""r"", ""confidence"": ""high""}]"\n')
    for path in (vault, brain, amp, csv_file):
        report = archive_import(bank=bank, records=open_archive(path)[2], actor="test", extract_entities=False)
        assert report.imported >= 1 and report.invalid == 0, (path.name, report.errors)
