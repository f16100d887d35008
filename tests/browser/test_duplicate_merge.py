"""Merging a near-duplicate cluster is a confirmed action in the browser, never the first button."""

from __future__ import annotations

import re

import pytest

from banks.models import Memory
from banks.services.duplicate_scan import duplicates_scan
from banks.services.memories import memory_retain

pytestmark = [pytest.mark.browser]

NOAH = "Noah Smith reported a broken laptop to the helpdesk on March 3, 2026 and paid $250 for the repair."
NOAH_AGAIN = "On March 3, 2026 Noah Smith reported a broken laptop to the helpdesk and paid $250 for the repair."


def test_a_cluster_is_merged_only_after_ticking_the_confirmation(page, django_user_model, make_bank):
    django_user_model.objects.create_superuser(username="ops", password="a-long-pass-phrase")
    bank = make_bank("user-noah")
    first = memory_retain(bank=bank, text=NOAH, actor="test").memory
    again = memory_retain(bank=bank, text=NOAH_AGAIN, actor="test", near_dedup=False).memory
    duplicates_scan(bank=bank, threshold=0.85, full=True)
    page.goto("/login/")
    page.get_by_label("User name").fill("ops")
    page.get_by_label("Password").fill("a-long-pass-phrase")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/$"))
    page.goto("/banks/user-noah/duplicates/?threshold=0.85")
    card = page.locator("form.cluster").first
    assert card.locator("li.pair .badge").first.inner_text().startswith("0.")
    assert not card.get_by_role("button", name="Merge cluster").is_visible()  # behind "Merge…"
    card.locator("summary", has_text="Merge").click()
    card.get_by_role("button", name="Merge cluster").click()  # not ticked: the browser refuses to send
    assert Memory.objects.live().filter(pk=again.pk).exists()
    card.get_by_label(re.compile("these say the same thing")).check()
    card.get_by_role("button", name="Merge cluster").click()
    page.wait_for_selector("text=Merged 1 into")
    again.refresh_from_db()
    assert again.archived_at is not None and again.merged_into_id == first.pk
