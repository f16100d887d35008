"""The operator's side of near-duplicates: a refused retain keeps the typed text and offers "store
anyway"; a cluster card shows each pair's similarity and word diff; merging needs a confirmation; the
clusters are paged."""

from __future__ import annotations

import pytest

from banks.models import Bank, Memory
from banks.selectors import duplicates as duplicate_selector
from banks.services.duplicate_scan import duplicates_scan
from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db

NOAH = "Noah Smith reported a broken laptop to the helpdesk on March 3, 2026 and paid $250 for the repair."
NOAH_AGAIN = "On March 3, 2026 Noah Smith reported a broken laptop to the helpdesk and paid $250 for the repair."


@pytest.fixture
def strict(bank):
    Bank.objects.filter(pk=bank.pk).update(dedup_threshold=0.85)
    bank.refresh_from_db()
    return bank


def test_a_refused_retain_keeps_the_text_shows_the_collision_and_can_store_anyway(admin_client, strict):
    first = memory_retain(bank=strict, text=NOAH, actor="test").memory
    response = admin_client.post("/banks/user-alice/memories/new", {"text": NOAH_AGAIN, "tags": "", "fact_type": ""})
    page = response.content.decode()
    assert response.status_code == 409
    assert NOAH_AGAIN in page  # the typed text is still in the form
    assert f"/banks/user-alice/memories/{first.memory_id}/" in page and NOAH in page
    assert "Store anyway" in page and "similar" in page
    assert Memory.objects.count() == 1
    stored = admin_client.post("/banks/user-alice/memories/new",
                               {"text": NOAH_AGAIN, "tags": "", "fact_type": "", "allow_duplicate": "1"})
    assert stored.status_code == 302
    assert Memory.objects.filter(text=NOAH_AGAIN).exists()


def test_the_very_same_text_is_refused_without_store_anyway(admin_client, strict):
    memory_retain(bank=strict, text=NOAH, actor="test")
    response = admin_client.post("/banks/user-alice/memories/new", {"text": NOAH, "tags": "", "fact_type": ""})
    page = response.content.decode()
    assert response.status_code == 409 and "the same text is already" in page and "Store anyway" not in page


def _cluster(bank):
    a = memory_retain(bank=bank, text=NOAH, actor="test").memory
    b = memory_retain(bank=bank, text=NOAH_AGAIN, actor="test", near_dedup=False).memory
    duplicates_scan(bank=bank, threshold=0.85, full=True)
    return a, b


def test_a_cluster_card_shows_pair_similarity_and_diff_and_merge_needs_confirming(admin_client, strict):
    a, b = _cluster(strict)
    page = admin_client.get("/banks/user-alice/duplicates/?threshold=0.85").content.decode()
    assert f"{a.memory_id} → {b.memory_id}" in page
    assert "<ins" in page and "<del" in page and 'class="merge-confirm"' in page
    assert 'value="merge" class="primary"' not in page
    ids = [a.memory_id, b.memory_id]
    admin_client.post("/banks/user-alice/duplicates/action", {"action": "merge", "ids": ids})
    assert Memory.objects.live().count() == 2  # not confirmed: nothing merged
    admin_client.post("/banks/user-alice/duplicates/action", {"action": "merge", "ids": ids, "confirm": "1"})
    b.refresh_from_db()
    assert b.archived_at is not None and b.merged_into_id == a.pk


def test_clusters_are_paged(admin_client, strict, monkeypatch):
    for n in range(3):
        memory_retain(bank=strict, text=f"Ticket {n} was closed by Mia Garcia after the laptop repair.", actor="t")
        memory_retain(bank=strict, text=f"After the laptop repair, Mia Garcia closed ticket {n}.", actor="t",
                      near_dedup=False)
    duplicates_scan(bank=strict, threshold=0.5, full=True)
    page = duplicate_selector.duplicate_clusters(bank=strict, threshold=0.5, limit=2)
    assert page.cluster_count == 3 and len(page.clusters) == 2 and page.next_offset == 2
    second = duplicate_selector.duplicate_clusters(bank=strict, threshold=0.5, limit=2, offset=2)
    assert len(second.clusters) == 1 and second.next_offset is None
    shown = {m.pk for c in page.clusters + second.clusters for m in c.memories}
    assert len(shown) == 6
    monkeypatch.setattr("curation.views.duplicates.PAGE_SIZE", 2)
    html = admin_client.get("/banks/user-alice/duplicates/?threshold=0.5").content.decode()
    assert "clusters 1–2 of 3" in html and "offset=2" in html
    html = admin_client.get("/banks/user-alice/duplicates/?threshold=0.5&offset=2").content.decode()
    assert "clusters 3–3 of 3" in html and html.count('class="card cluster"') == 1
