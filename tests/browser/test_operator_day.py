"""An operator's routine, click by click, in real Chromium."""

from __future__ import annotations

import re

import pytest

from banks.models import ApiToken, Job, Memory, MentalModel
from tests.browser.conftest import shot
from tests.portability.fixtures import FIXTURES, bank_folder

pytestmark = [pytest.mark.browser]


@pytest.fixture
def worker_roots(settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    return tmp_path


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_superuser(username="ops", password="a-long-pass-phrase")


def login(page):
    page.goto("/login/")
    page.get_by_label("User name").fill("ops")
    page.get_by_label("Password").fill("a-long-pass-phrase")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/$"))


def test_an_operator_day(worker_roots, celery_worker, page, admin):
    login(page)
    shot(page, "01-banks-empty")

    # Create a bank.
    page.get_by_text("Create a bank").click()
    page.get_by_label("Bank id").fill("user-ines")
    page.get_by_label("Name", exact=True).fill("Inês")
    page.get_by_role("button", name="Create bank").click()
    page.wait_for_url("**/banks/user-ines/")
    assert page.get_by_text("Bank user-ines created.").is_visible()

    # Retain through the UI.
    page.get_by_role("link", name="Memories", exact=True).click()
    for text, tags in (("Inês prefers oat milk in her coffee.", "food"),
                       ("Inês runs along the river every Sunday.", "sport"),
                       ("The Tokyo stand-up starts Tuesdays at 10:00.", "work")):
        page.get_by_text("Retain a memory").click()
        page.get_by_label("Text", exact=True).fill(text)
        page.get_by_label("Tags (comma separated)").fill(tags)
        page.get_by_role("button", name="Retain").click()
        page.wait_for_selector("text=Retained as")
    assert Memory.objects.filter(bank__bank_id="user-ines").count() == 3
    shot(page, "02-memories")

    # Search with hybrid recall; the trace is there on demand.
    page.get_by_label("Search (hybrid recall)").fill("what does Inês drink with coffee")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_selector("text=Recall trace")
    first = page.locator("#memory-results tbody tr").first
    assert "oat milk" in first.inner_text()
    assert "q=what" in page.url  # the search is bookmarkable
    shot(page, "03-search")

    # Edit a memory inline.
    first.get_by_role("link").click()
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("Text", exact=True).fill("Inês prefers oat milk in her coffee, never sugar.")
    page.get_by_role("button", name="Save").click()
    page.wait_for_selector("text=Saved.")
    assert Memory.objects.filter(text__contains="never sugar").exists()
    shot(page, "04-memory-detail")

    # Bulk-archive everything tagged food or sport, after a preview of how many it touches.
    page.goto("/banks/user-ines/memories/?tags=food,sport")
    page.get_by_label("Bulk action").select_option("archive")
    page.get_by_label("Apply to").select_option("all")
    page.get_by_role("button", name="Preview").click()
    page.wait_for_selector("#bulk-confirm")
    assert "will change 2 memories" in page.locator("#bulk-confirm").inner_text()
    shot(page, "05-bulk-preview")
    page.get_by_role("button", name="Yes, archive 2").click()
    page.wait_for_selector("text=archive: 2 memories changed")
    assert Memory.objects.live().filter(bank__bank_id="user-ines").count() == 1

    # Restore one.
    page.goto("/banks/user-ines/memories/?state=archived")
    page.locator("#memory-results tbody tr a").first.click()
    page.get_by_role("button", name="Restore").click()
    page.wait_for_selector("text=Restored.")
    assert Memory.objects.live().filter(bank__bank_id="user-ines").count() == 2

    # A mental model: create, edit one block (a delta operation), diff the revisions.
    page.get_by_role("link", name="Mental models", exact=True).click()
    page.get_by_label("Id", exact=True).fill("prefs")
    page.get_by_label("Title", exact=True).fill("Inês's preferences")
    page.get_by_label("Content (markdown; headings become sections)").fill("## Drinks\n\nOat milk.\n\n## Sport\n\nRunning.")
    page.get_by_role("button", name="Create").click()
    page.wait_for_url("**/models/prefs/")
    page.get_by_text("Edit block 0").first.click()
    page.locator("#b-drinks-0").fill("Oat milk, no sugar.")
    page.get_by_role("button", name="Save block").first.click()
    page.wait_for_selector("text=Saved as revision 2.")
    model = MentalModel.objects.get(model_id="prefs")
    assert model.revision == 2 and model.revisions.get(number=2).operations[0]["op"] == "replace_block"
    page.get_by_label("Compare revision").select_option("1")
    page.get_by_label("with").select_option("2")
    page.get_by_role("button", name="Show differences").click()
    page.wait_for_selector("#diff")
    assert page.locator("#diff .del").filter(has_text="Oat milk.").count() == 1
    assert page.locator("#diff .add").filter(has_text="Oat milk, no sugar.").count() == 1
    shot(page, "06-model-diff")

    # Author a directive.
    page.get_by_role("link", name="Directives", exact=True).click()
    page.get_by_label("Rule", exact=True).fill("Always answer Inês in Portuguese.")
    page.get_by_role("button", name="Add directive").click()
    page.wait_for_selector("text=Always answer Inês in Portuguese.")
    assert MentalModel.objects.filter(kind="directive", is_active=True).count() == 1
    shot(page, "07-directives")

    # Import an archive with a live progress bar, to completion, on the real worker.
    (bank_folder(worker_roots, "user-ines") / "sample.ama.jsonl").write_bytes((FIXTURES / "sample.ama.jsonl").read_bytes())
    page.get_by_role("link", name="Import / export", exact=True).click()
    shot(page, "08-transfer")
    page.locator("tr", has_text="sample.ama.jsonl").get_by_role("button", name="Preview").click()
    page.wait_for_selector(".job-state:text('succeeded')", timeout=60_000)
    assert "would import 10" in page.locator("#job-status").inner_text()  # and one observation
    page.get_by_role("button", name="Run this import").click()
    page.wait_for_selector("progress")
    page.wait_for_selector(".job-state:text('succeeded')", timeout=60_000)
    job = Job.objects.filter(kind="import").order_by("-pk").first()
    assert job.counts["imported"] == 10 and job.counts["observations"] == 1 and not job.params["dry_run"]
    assert page.locator("progress").get_attribute("value") == page.locator("progress").get_attribute("max")
    shot(page, "09-import-done")

    # Overview, observations, audit.
    page.goto("/banks/user-ines/")
    stats = [s.inner_text().strip() for s in page.locator(".grid .card .stat").all()[:4]]
    # memories (counted a minute at a time), observations, mental models, directives
    assert stats[2:] == ["1", "1"], stats
    assert stats[0].rstrip("+").isdigit()
    recent = page.locator("table tbody tr")
    assert recent.count() >= 5
    assert "import" in recent.first.inner_text()
    shot(page, "10-overview")
    page.goto("/audit/?bank=user-ines")
    assert page.locator("tbody tr").count() >= 8
    shot(page, "11-audit")

    # Create a token (the secret shows once) and revoke it.
    page.goto("/tokens/")
    page.get_by_label("Name (what uses it)").fill("assistant")
    page.get_by_label(re.compile("^Banks")).fill("user-ines")
    page.get_by_role("button", name="Create token").click()
    secret = page.locator("#token-secret").inner_text()
    assert secret.startswith("mh_")
    shot(page, "12-token-created")
    page.reload()
    assert page.locator("#token-secret").count() == 0
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke").click()
    page.wait_for_selector("text=revoked")
    assert ApiToken.objects.get().revoked_at is not None

    # Narrow screen still works.
    page.set_viewport_size({"width": 420, "height": 900})
    page.goto("/banks/user-ines/memories/")
    rows = page.locator("#memory-results tbody tr")
    assert rows.count() == Memory.objects.live().filter(bank__bank_id="user-ines").count()
    assert rows.first.is_visible()
    # The filters fold into a drawer that opens on demand.
    search = page.get_by_label("Search (hybrid recall)")
    assert not search.is_visible()
    page.locator("button[aria-controls=memory-filters]").click()
    assert search.is_visible()
    # Nothing wider than the screen: the page itself never scrolls sideways.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    shot(page, "13-memories-narrow")

    violations = [e for e in page.csp_errors if "Content Security Policy" in e]
    (shot(page, "14-end").parent / "console-errors.txt").write_text("\n".join(page.csp_errors))
    assert not violations, violations
