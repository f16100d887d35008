"""One count per bank on every page (exact up to the bound, the same "about N" above it), and the overview
shows the operator's own writes at once."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db


def _fill(bank, n):
    for i in range(n):
        memory_retain(bank=bank, text=f"Ticket {i} concerns printer {i * 7} on floor {i % 5}.", actor="test",
                      near_dedup=False, extract_entities=False)


def _pages(client):
    return {
        "home": client.get("/").content.decode(),
        "overview": client.get("/banks/user-alice/").content.decode(),
        "list": client.get("/banks/user-alice/memories/").content.decode(),
    }


def test_every_page_shows_the_same_exact_count_below_the_bound(admin_client, bank):
    _fill(bank, 12)
    pages = _pages(admin_client)
    assert ">12<" in pages["home"] and ">12<" in pages["overview"] and "12 memories match" in pages["list"]


def test_above_the_bound_every_page_shows_the_same_estimate(admin_client, bank, monkeypatch):
    _fill(bank, 30)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_memory")
    monkeypatch.setattr("banks.selectors.memories.COUNT_CAP", 10)
    pages = _pages(admin_client)
    said = {name: re.findall(r"about [\d,]+", page) for name, page in pages.items()}
    assert all(said.values()), said
    assert len({x for found in said.values() for x in found}) == 1, said  # one estimate, everywhere
    assert "10000+" not in pages["home"] and "+<" not in pages["overview"]


def test_the_overview_shows_the_operators_own_retain_at_once(admin_client, bank):
    _fill(bank, 3)
    assert re.search(r'class="stat">3<', admin_client.get("/banks/user-alice/").content.decode())
    response = admin_client.post("/banks/user-alice/memories/new", {"text": "Noah fixed the printer.", "tags": "",
                                                                    "fact_type": ""})
    assert response.status_code == 302
    assert re.search(r'class="stat">4<', admin_client.get("/banks/user-alice/").content.decode())


def test_bank_health_says_the_count_the_pages_say(admin_client, bank, monkeypatch):
    from banks.selectors.bank_health import bank_health
    from banks.selectors.memories import bank_memory_count

    _fill(bank, 12)
    view = bank_health(bank)
    assert view.metrics["memory_count"] == 12.0 and view.details["memory_count_exact"] is True
    _fill(bank, 18)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_memory")
    monkeypatch.setattr("banks.selectors.memories.COUNT_CAP", 10)
    estimate, exact = bank_memory_count(bank)
    view = bank_health(bank)
    # Above the bound: the estimate, flagged as one, not a COUNT of every row.
    assert not exact and view.metrics["memory_count"] == float(estimate)
    assert view.details["memory_count_exact"] is False
    assert f"about {estimate:,}" in admin_client.get("/banks/user-alice/").content.decode()


def test_the_memory_filters_show_the_operators_own_new_source_at_once(admin_client, bank):
    _fill(bank, 2)
    page = admin_client.get("/banks/user-alice/memories/").content.decode()
    assert "crm-sync" not in page and "meeting-notes" not in page
    memory_retain(bank=bank, text="Ava moved the stand-up to 9:30.", actor="user:admin", source="crm-sync",
                  fact_type="meeting-notes", near_dedup=False, extract_entities=False)
    page = admin_client.get("/banks/user-alice/memories/").content.decode()
    assert '<option value="crm-sync"' in page and '<option value="meeting-notes"' in page
