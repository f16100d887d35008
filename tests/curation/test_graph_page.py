"""The graph page: every memory that mentions an entity is reachable page by page, the link picker is
never emptied by a search, labels are wrapped rather than cut, and a legend says what is drawn."""

from __future__ import annotations

import re

import pytest

from banks.models import Entity
from portability.records import EntityRecord, MemoryRecord
from portability.services.importer import archive_import
from tests.factories import make_bank, make_memory

pytestmark = pytest.mark.django_db


def test_every_one_of_1740_mentions_is_reachable(admin_client, django_assert_max_num_queries):
    bank = make_bank("user-alice")

    def records() -> list[MemoryRecord]:
        return [MemoryRecord(memory_id=f"m{i}", text=f"Report {i}: Noah Smith checked the pumps.",
                             entities=[EntityRecord(name="Noah Smith", entity_type="PERSON")]) for i in range(1740)]

    archive_import(bank=bank, records=records, actor="test", extract_entities=False)
    noah = Entity.objects.get(bank=bank, name="Noah Smith")
    assert noah.mention_count == 1740
    seen: list[str] = []
    url = f"/banks/user-alice/graph/?entity={noah.entity_id}"
    pages = 0
    while url:
        with django_assert_max_num_queries(15):  # the same few on the first page and the 35th
            page = admin_client.get(url.replace("&amp;", "&")).content.decode()
        pages += 1
        listed = page.split('id="mentions-h"')[1].split("</section>")[0]
        seen += re.findall(r"Report (\d+):", listed)
        more = re.search(r'<a href="([^"]+)">More mentions', listed)
        url = more.group(1) if more else ""
        if pages == 1:
            assert "1–50 of 1,740" in listed
        assert pages < 100
    assert sorted(seen, key=int) == [str(i) for i in range(1740)]  # each one, once
    assert "1,701–1,740 of 1,740" in listed and "First page" in listed


def test_the_link_picker_still_offers_entities_after_a_search(admin_client):
    bank = make_bank("user-alice")
    make_memory(bank, "Priya Raman met Noah Smith in Lisbon.", entities=["Priya Raman", "Noah Smith", "Lisbon"])
    make_memory(bank, "Ana Costa joined the Porto office.", entities=["Ana Costa", "Porto"])
    priya = Entity.objects.get(bank=bank, name="Priya Raman")
    page = admin_client.get(f"/banks/user-alice/graph/?q=Priya&entity={priya.entity_id}").content.decode()
    picker = page.split('id="l-b"')[1].split("</select>")[0]
    options = re.findall(r"<option[^>]*>([^<]+)</option>", picker)
    assert {"Noah Smith", "Lisbon", "Ana Costa", "Porto"} <= set(options) and "Priya Raman" not in options


def test_long_names_are_wrapped_not_cut_and_a_legend_explains_the_picture(admin_client):
    bank = make_bank("user-alice")
    long_name = "International Federation of Pump Engineers"
    make_memory(bank, f"Noah Smith joined the {long_name}.", entities=["Noah Smith", long_name])
    noah = Entity.objects.get(bank=bank, name="Noah Smith")
    page = admin_client.get(f"/banks/user-alice/graph/?entity={noah.entity_id}").content.decode()
    picture = page.split("<svg")[1].split("</svg>")[0]
    spans = re.findall(r"<tspan[^>]*>([^<]+)</tspan>", picture)
    assert "International Federation" in spans and "of Pump Engineers" in spans
    legend = page.split('id="legend-h"')[1].split("</section>")[0]
    for label in ("Person", "a memory", "mentions", "a typed link"):
        assert label in legend
