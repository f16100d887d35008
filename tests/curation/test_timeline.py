"""The timeline lists a bank's memories by the day they happened, newest first, paged; memories without a
date are counted, not placed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db


def test_memories_are_grouped_by_occurred_day_newest_first(admin_client, bank):
    start = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    for i, text in enumerate(["Kick-off with the Porto team.", "Budget approved.", "First release shipped."]):
        memory_retain(bank=bank, text=text, actor="test", occurred_at=start + timedelta(days=i * 10))
    memory_retain(bank=bank, text="Second release notes drafted.", actor="test",
                  occurred_at=start + timedelta(days=20, hours=3))
    memory_retain(bank=bank, text="Alice likes jazz.", actor="test")  # no date
    page = admin_client.get("/banks/user-alice/timeline/").content.decode()
    order = [page.index(d) for d in ('datetime="2025-03-21"', 'datetime="2025-03-11"', 'datetime="2025-03-01"')]
    assert order == sorted(order)
    day = page.split('datetime="2025-03-21"')[1].split("</section>")[0]
    assert "First release shipped." in day and "Second release notes drafted." in day
    assert "1 memory says no date" in page and "Alice likes jazz." not in page
    assert 'aria-current="page">Timeline<' in page


def test_the_timeline_is_paged(admin_client, bank, monkeypatch):
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for i in range(5):
        memory_retain(bank=bank, text=f"Milestone {i} reached by the platform team.", actor="test",
                      occurred_at=start + timedelta(days=i), near_dedup=False)
    monkeypatch.setattr("curation.views.timeline.PAGE", 2)
    first = admin_client.get("/banks/user-alice/timeline/").content.decode()
    assert "Milestone 4" in first and "Milestone 3" in first and "Milestone 2" not in first
    cursor = first.split("?after=")[1].split('"')[0]
    second = admin_client.get(f"/banks/user-alice/timeline/?after={cursor}").content.decode()
    assert "Milestone 2" in second and "Milestone 1" in second and "Milestone 4" not in second
    assert admin_client.get("/banks/nobody/timeline/").status_code == 404
