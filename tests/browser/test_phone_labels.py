"""On a phone, table rows become cards and keep their column labels (real Chromium)."""

from __future__ import annotations

import re

import pytest

from banks.services.memories import memory_retain

pytestmark = [pytest.mark.browser]


def test_phone_cards_name_each_value(browser, live_server, django_user_model, make_bank):
    django_user_model.objects.create_superuser(username="ops", password="a-long-pass-phrase")
    bank = make_bank("user-ines")
    memory_retain(bank=bank, text="Inês Costa met Rui Alves in Porto.", actor="test")
    context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=live_server.url)
    page = context.new_page()
    try:
        page.goto("/login/")
        page.get_by_label("User name").fill("ops")
        page.get_by_label("Password").fill("a-long-pass-phrase")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(re.compile(r"/$"))
        assert not page.locator("table.table thead").first.is_visible()  # the header row is hidden
        labels = page.eval_on_selector_all(
            "table.table tbody tr:first-child td",
            "cells => cells.map(c => getComputedStyle(c, '::before').content)")
        assert labels[:3] == ['"Bank"', '"Memories"', '"Observations"'], labels
    finally:
        context.close()
