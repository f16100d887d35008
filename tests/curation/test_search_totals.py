"""The memory list's search says the same total on every page."""

from __future__ import annotations

import re

import pytest

from banks.models import Bank
from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db


def test_search_totals_are_stable_across_pages(admin_client, bank, monkeypatch):
    Bank.objects.filter(pk=bank.pk).update(config={"recall": {"depth": 10}})
    for i in range(60):
        memory_retain(bank=bank, text=f"Printer {i} on floor {i % 7} needs toner number {i * 3}.", actor="test",
                      near_dedup=False, extract_entities=False)
    monkeypatch.setattr("curation.views.memories.PAGE", 5)
    totals = []
    for page in (1, 2, 3, 4):
        body = admin_client.get("/banks/user-alice/memories/", {"q": "printer toner floor", "page": page})
        found = re.search(r"Hits (\d+)–(\d+) of (\d+) candidates", body.content.decode())
        assert found, body.content.decode()[:2000]
        assert int(found.group(1)) == (page - 1) * 5 + 1
        totals.append(int(found.group(3)))
    assert len(set(totals)) == 1, totals
