"""Re-extracting entities from the Import / export page, in real Chromium, on the real worker."""

from __future__ import annotations

import re

import pytest

from banks.models import Job, MemoryEntity
from banks.services.memories import memory_retain

pytestmark = [pytest.mark.browser]


def test_the_button_asks_first_then_runs_the_job(celery_worker, page, django_user_model, make_bank):
    django_user_model.objects.create_superuser(username="ops", password="a-long-pass-phrase")
    bank = make_bank("user-ines")
    for text in ("Inês Costa met Rui Alves in Porto.", "Rui Alves moved the Lisbon office."):
        memory_retain(bank=bank, text=text, actor="test")
    MemoryEntity.objects.filter(memory__bank=bank).delete()
    page.goto("/login/")
    page.get_by_label("User name").fill("ops")
    page.get_by_label("Password").fill("a-long-pass-phrase")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/$"))
    page.goto("/banks/user-ines/transfer/")
    asked: list[str] = []

    def dismiss(dialog) -> None:  # noqa: ANN001
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.get_by_role("button", name="Re-extract entities").click()
    assert asked and "Current mentions are replaced" in asked[0]
    assert not Job.objects.filter(kind="reextract_entities").exists()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Re-extract entities").click()
    page.wait_for_url(re.compile(r"/banks/user-ines/jobs/\d+/$"))
    page.wait_for_selector(".job-state:text('succeeded')", timeout=60_000)
    assert "memories 2" in page.locator("#job-status").inner_text()
    assert MemoryEntity.objects.filter(memory__bank=bank).exists()
