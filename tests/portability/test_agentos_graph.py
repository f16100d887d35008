"""AgentOS knowledge graphs become entities, mentions, entity links and memory links; deleted traces are
imported forgotten. The JSON fixture, then a SQLite brain built here."""

from __future__ import annotations

import json
import sqlite3

import pytest

from banks.models import Entity, EntityLink, Memory, MemoryLink
from portability.formats.agentos_graph import read_graph
from portability.formats.registry import open_archive
from portability.services import archive_import
from tests.portability.fixtures import FIXTURES

MARCUS_PRIYA = "mt_8fcd6ea5-d071-4cbe-b5d4-91a0bc2d3e45"


def test_graph_rule_reports_edges_it_cannot_place():
    nodes = [{"id": "kn_t", "type": "trace", "label": "trace:t1", "properties": json.dumps({"trace_id": "t1"})},
             {"id": "kn_a", "type": "person", "label": "Ana"}, {"id": "kn_b", "type": "org", "label": "Acme"},
             {"id": "kn_c", "type": "org", "label": "Orphan Co"}, {"id": "kn_d", "type": "org", "label": "Other"}]
    edges = [{"id": "e1", "source_id": "kn_a", "target_id": "kn_t", "type": "mentioned_in"},
             {"id": "e2", "source_id": "kn_a", "target_id": "kn_b", "type": "WORKS_AT", "weight": 0.7},
             {"id": "e3", "source_id": "kn_c", "target_id": "kn_d", "type": "OWNS"},
             {"id": "e4", "source_id": "kn_a", "target_id": "kn_missing", "type": "KNOWS"}]
    graph = read_graph(nodes, edges, ["t1", "t2"])
    assert [e.name for e in graph.mentions["t1"].values()] == ["Ana"]
    assert [(link.source.name, link.target.name, link.confidence) for link in graph.entity_links["t1"]] == [
        ("Ana", "Acme", 0.7), ("Orphan Co", "Other", 1.0)]  # nobody mentions the orphans: the first trace carries them
    assert [p.position for p in graph.problems] == ["edges[3]"]


@pytest.mark.django_db
def test_json_fixture_graph_and_deleted_trace(bank):
    _, _, records = open_archive(FIXTURES / "agentos_traces.json")
    report = archive_import(bank=bank, records=records, actor="test")
    assert (report.imported, report.duplicates, report.invalid) == (6, 2, 0), report.errors
    assert (report.forgotten, report.entity_links) == (1, 1)
    deleted = Memory.objects.get(bank=bank, memory_id="mt_90de7fb6-e182-4dcf-86e5-a2b1cd3e4f56")
    assert deleted.forgotten_at is not None and not Memory.objects.live().filter(pk=deleted.pk).exists()
    owner = Memory.objects.get(bank=bank, memory_id=MARCUS_PRIYA)
    mentioned = {(e.name, e.entity_type) for e in owner.entities.all()}
    assert {("Priya Raman", "PERSON"), ("Billing Service", "CONCEPT")} <= mentioned
    link = EntityLink.objects.get(bank=bank)
    assert (link.entity_a.name, link.link_type, link.entity_b.name, link.confidence) == (
        "Priya Raman", "OWNS", "Billing Service", 0.8)
    node = owner.metadata["agentos"]["nodes"][0]
    assert (node["type"], node["properties"]) == ("person", {"role": "staff engineer"})
    again = archive_import(bank=bank, records=open_archive(FIXTURES / "agentos_traces.json")[2], actor="test")
    assert again.imported == 0 and EntityLink.objects.filter(bank=bank).count() == 1


def _brain(path) -> None:
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE memory_traces (brain_id TEXT, id TEXT, type TEXT, scope TEXT, content TEXT, embedding BLOB,
            strength REAL, created_at INTEGER, last_accessed INTEGER, retrieval_count INTEGER, tags TEXT,
            emotions TEXT, metadata TEXT, deleted INTEGER);
        CREATE TABLE knowledge_nodes (brain_id TEXT, id TEXT, type TEXT, label TEXT, properties TEXT, embedding BLOB,
            confidence REAL, source TEXT, created_at INTEGER);
        CREATE TABLE knowledge_edges (brain_id TEXT, id TEXT, source_id TEXT, target_id TEXT, type TEXT,
            weight REAL, bidirectional INTEGER, metadata TEXT, created_at INTEGER);
    """)
    traces = [("mt_1", "semantic", "Ana runs the Lisbon office.", 0), ("mt_2", "episodic", "Ana moved to Porto.", 0),
              ("mt_3", "semantic", "Ana's old phone number.", 1)]
    db.executemany("INSERT INTO memory_traces VALUES ('b', ?, ?, 'user', ?, NULL, 1, 1775000000000, NULL, 0, "
                   "'[]', '{}', '{}', ?)", traces)
    db.executemany("INSERT INTO knowledge_nodes VALUES ('b', ?, ?, ?, ?, NULL, 1, '{}', 0)", [
        ("kn_1", "trace", "trace:mt_1", json.dumps({"trace_id": "mt_1"})),
        ("kn_2", "trace", "trace:mt_2", json.dumps({"trace_id": "mt_2"})),
        ("kn_3", "person", "Ana", "{}"), ("kn_4", "place", "Lisbon", "{}")])
    db.executemany("INSERT INTO knowledge_edges VALUES ('b', ?, ?, ?, ?, ?, ?, '{}', 0)", [
        ("ke_1", "kn_2", "kn_1", "supersedes", 0.9, 0), ("ke_2", "kn_1", "kn_3", "mentions", 1, 0),
        ("ke_3", "kn_3", "kn_4", "LIVES_IN", 0.5, 1)])
    db.commit()
    db.close()


@pytest.mark.django_db
def test_sqlite_brain_graph(bank, tmp_path):
    _brain(tmp_path / "brain.sqlite")
    _, _, records = open_archive(tmp_path / "brain.sqlite")
    report = archive_import(bank=bank, records=records, actor="test")
    assert (report.imported, report.forgotten, report.links, report.entity_links) == (3, 1, 1, 1), report.errors
    link = MemoryLink.objects.select_related("source", "target").get(bank=bank)
    assert (link.source.memory_id, link.link_type, link.target.memory_id, link.confidence) == (
        "mt_2", "supersedes", "mt_1", 0.9)
    assert set(Entity.objects.filter(bank=bank, memories__memory_id="mt_1").values_list("name", flat=True)) >= {
        "Ana"}
    assert EntityLink.objects.get(bank=bank).metadata["bidirectional"] is True


@pytest.mark.django_db
def test_agentos_export_is_agentos_shaped_and_its_graph_alone_restores_entities_and_links(make_bank, tmp_path):
    from portability.services.exporter import archive_export_as

    source = make_bank("agentos-out")
    _, _, records = open_archive(FIXTURES / "agentos_traces.json")
    archive_import(bank=source, records=records, actor="test")
    archive_export_as(bank=source, dest=tmp_path / "brain.json", fmt="agentos_json", actor="test")
    data = json.loads((tmp_path / "brain.json").read_text())
    trace = next(t for t in data["traces"] if t["id"] == MARCUS_PRIYA)
    assert isinstance(trace["tags"], str) and isinstance(trace["metadata"], str) and isinstance(
        trace["created_at"], int) and trace["type"] == "relational" and trace["scope"] == "organization"
    assert {n["label"]: n["type"] for n in data["nodes"] if n["type"] != "trace"}["Priya Raman"] == "person"
    # What AgentOS itself reads (it knows nothing of our metadata block) still carries the graph.
    for row in data["traces"]:
        meta = json.loads(row["metadata"])
        meta.pop("memoryhub")
        row["metadata"] = json.dumps(meta)
    (tmp_path / "plain.json").write_text(json.dumps(data))
    copy = make_bank("agentos-in")
    report = archive_import(bank=copy, records=open_archive(tmp_path / "plain.json")[2], actor="test",
                            extract_entities=False)
    assert report.imported == Memory.objects.filter(bank=source, forgotten_at__isnull=True).count()
    before = {(m.memory_id, e.name.lower()) for m in Memory.objects.filter(bank=source, forgotten_at__isnull=True)
              for e in m.entities.all()}
    after = {(m.memory_id, e.name.lower()) for m in Memory.objects.filter(bank=copy) for e in m.entities.all()}
    assert before == after and ("mt_8fcd6ea5-d071-4cbe-b5d4-91a0bc2d3e45", "priya raman") in after


@pytest.mark.django_db
def test_a_bank_under_legal_hold_archives_deleted_traces_instead_of_forgetting(bank):
    from banks.services.holds import hold_set

    hold_set(bank=bank, hold_id="case-7", reason="litigation", set_by="legal", actor="test")
    report = archive_import(bank=bank, records=open_archive(FIXTURES / "agentos_traces.json")[2], actor="test")
    assert (report.forgotten, report.archived) == (0, 1)
    deleted = Memory.objects.get(bank=bank, memory_id="mt_90de7fb6-e182-4dcf-86e5-a2b1cd3e4f56")
    assert deleted.forgotten_at is None and deleted.archived_at is not None
