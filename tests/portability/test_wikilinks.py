"""Obsidian's link resolution as a pure rule (no database), then the fixture vault into a bank."""

from __future__ import annotations

import pytest

from banks.models import Memory, MemoryLink
from portability.formats.registry import open_archive
from portability.formats.wikilinks import (
    VaultIndex,
    VaultNote,
    Wikilink,
    keep_among_duplicates,
    parse_wikilinks,
)
from portability.services import archive_import
from tests.portability.fixtures import FIXTURES


def _index(*notes: VaultNote) -> VaultIndex:
    return VaultIndex.build(notes)


def _note(path: str, **kwargs) -> VaultNote:
    return VaultNote(path=path, memory_id=f"id:{path}", **kwargs)


def test_parse_aliases_headings_blocks_embeds_and_code():
    body = ("See [[Billing Service|billing]] and [[Runbooks#Failover]], [[Note#^block1]], ![[diagram.png]], "
            "![[Runbooks]], [[#Local heading]], a table [[Priya Raman\\|Priya]].\n"
            "```\n[[Inside a fence]]\n```\nand `[[inline code]]`.")
    assert parse_wikilinks(body) == [
        Wikilink("Billing Service", alias="billing"), Wikilink("Runbooks", heading="Failover"),
        Wikilink("Note", heading="^block1"), Wikilink("diagram.png", embed=True), Wikilink("Runbooks", embed=True),
        Wikilink("", heading="Local heading"), Wikilink("Priya Raman", alias="Priya")]
    assert Wikilink("diagram.png").is_attachment and Wikilink("board.canvas").is_attachment
    assert not any(Wikilink(t).is_attachment for t in ("Runbooks.md", "v1.2", "report.final", "Runbooks"))


def test_basename_path_and_case_insensitivity():
    index = _index(_note("People/Priya Raman.md"), _note("Runbooks.md"), _note("Notes/report.final.md"))
    assert index.resolve("report.final").path == "Notes/report.final.md"
    assert index.resolve("Priya Raman").path == "People/Priya Raman.md"
    assert index.resolve("people/priya raman").path == "People/Priya Raman.md"
    assert index.resolve("People/Priya Raman.md").path == "People/Priya Raman.md"
    assert index.resolve("/Runbooks").path == "Runbooks.md"
    assert index.resolve("Pager Duty Policy") is None
    assert index.resolve("Other/Priya Raman") is None  # a folder that does not match never falls back to the name


def test_ambiguous_name_shortest_path_wins():
    index = _index(_note("Zeta/Deep/Plan.md"), _note("Work/Plan.md"), _note("Alpha/Plan.md"))
    assert index.resolve("Plan").path == "Work/Plan.md"  # 12 characters beat 13 and 17
    assert index.resolve("Deep/Plan").path == "Zeta/Deep/Plan.md"  # a path suffix narrows it
    tie = _index(_note("b/Plan.md"), _note("a/Plan.md"))
    assert tie.resolve("Plan").path == "a/Plan.md"


def test_relative_links_stay_inside_the_vault():
    index = _index(_note("Projects/Billing.md"), _note("Projects/Sub/Notes.md"), _note("Billing.md"))
    assert index.resolve("./Billing", "Projects/Sub2.md").path == "Projects/Billing.md"
    assert index.resolve("../Billing", "Projects/Sub/Notes.md").path == "Projects/Billing.md"
    assert index.resolve("../../../etc/passwd", "Projects/Sub/Notes.md") is None


def test_aliases_and_front_matter_ids():
    billing = _note("Projects/Billing Service.md", aliases=("Billing", "billing-svc"))
    marcus = _note("People/Marcus Lee.md", note_id="mt_8fcd")
    index = _index(billing, marcus, _note("Other/Billing Notes.md"))
    assert index.resolve("billing").path == billing.path
    assert index.resolve("BILLING-SVC").path == billing.path
    assert index.resolve("mt_8fcd").path == marcus.path
    # A note actually named like an alias wins over the alias.
    named = _index(billing, _note("Billing.md"))
    assert named.resolve("Billing").path == "Billing.md"


def test_identical_notes_keep_the_one_outside_archive():
    original = _note("People/Priya Raman.md", body="same")
    copy = _note("Archive/Priya Raman (copy).md", body="same")
    deeper = _note("Team/People/Priya Raman.md", body="same")
    given_up = keep_among_duplicates([copy, deeper, original])
    assert given_up == {"Archive/Priya Raman (copy).md": original, "Team/People/Priya Raman.md": original}
    index = VaultIndex.build([copy, original])
    assert index.resolve("Priya Raman (copy)").path == "People/Priya Raman.md"


@pytest.mark.django_db
def test_fixture_vault_links_all_resolve(bank):
    _, _, records = open_archive(FIXTURES / "obsidian_vault")
    report = archive_import(bank=bank, records=records, actor="test")
    assert (report.imported, report.duplicates, report.invalid, report.unresolved_links) == (5, 1, 1, 0)
    ids = set(Memory.objects.filter(bank=bank).values_list("memory_id", flat=True))
    assert "note:People/Priya Raman" in ids and not any(i.startswith("note:Archive/") for i in ids)
    links = {(link.source.memory_id, link.target.memory_id, link.metadata.get("heading"))
             for link in MemoryLink.objects.filter(bank=bank).select_related("source", "target")}
    marcus, priya, billing = "mt_8fcd6ea5-d071-4cbe-b5d4-91a0bc2d3e45", "note:People/Priya Raman", \
        "note:Projects/Billing Service"
    assert links == {
        (billing, priya, None), (billing, marcus, None), (billing, "note:Runbooks", "Failover"),
        (marcus, priya, None), (marcus, billing, None), (priya, billing, None),
        ("note:Daily/2026-03-14", marcus, None), ("note:Runbooks", priya, None)}
    dangling = Memory.objects.get(bank=bank, memory_id=billing).metadata["obsidian"]
    assert dangling["unresolved"] == ["Pager Duty Policy"] and dangling["embeds"] == [
        {"target": "billing-diagram.png"}]


@pytest.mark.django_db
def test_links_to_notes_that_cannot_be_memories_are_reported_not_left_pending(bank, tmp_path):
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "Empty.md").write_text("---\ntags: []\n---\n")
    (vault / "Broken.md").write_text("---\n: [unclosed\n---\nbody\n")
    (vault / "Hub.md").write_text("See [[Empty]], [[Broken]] and [[Spoke|the spoke]].\n")
    (vault / "Spoke.md").write_text("The spoke.\n")
    report = archive_import(bank=bank, records=open_archive(vault)[2], actor="test")
    assert (report.imported, report.links, report.unresolved_links) == (2, 1, 0), report.errors
    hub = Memory.objects.get(bank=bank, memory_id="note:Hub")
    assert hub.metadata["obsidian"]["unresolved"] == ["Empty", "Broken"]
