"""Operators at size, walked in real Chromium: each row of what broke an operator's walk on a big bank
(export that hung, jobs that lied, archives that did not restore, duplicates that were not, previews that
differed from runs, stale entities, slow bulk actions, numbers that disagreed, the smaller things) is
walked again as an operator would, on a generated bank of a few thousand memories and a real worker."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from django.utils import timezone

from banks.models import Bank, Entity, Job, JobState, Memory
from banks.selectors.memories import bank_memory_count
from banks.services.banks import bank_update
from banks.services.memories import memory_retain
from portability.services.bank_archive import TABLES
from tests.browser.conftest import axe_violations, shot
from tests.portability.fixtures import FIXTURES, bank_folder
from tests.portability.test_bank_archive import rich_bank, table
from tests.portability.test_job_kinds import _fill

pytestmark = [pytest.mark.browser, pytest.mark.worker]

# Big enough that every page must bound its work (the counts cap is lowered below it), quick to build
# through the bulk row path.
SIZE = 3000
BIG = "ops-big"
PEOPLE = "ops-people"
NOAH = "Noah Smith reported a broken laptop to the helpdesk on March 3, 2026 and paid $250 for the repair."
LIAM = "Liam Brown reported a broken laptop to the helpdesk on March 3, 2026 and paid $250 for the repair."
NOAH_AGAIN = "On March 3, 2026 Noah Smith reported a broken laptop to the helpdesk and paid $250 for the repair."
FINISHED = ".job-state:text-matches('succeeded|failed|cancelled')"


@pytest.fixture
def roots(settings, tmp_path):
    """Set before the worker starts: it reads the roots from its environment."""
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    return tmp_path


def _login(page, django_user_model) -> None:
    django_user_model.objects.create_superuser(username="ops", password="a-long-pass-phrase")
    page.goto("/login/")
    page.get_by_label("User name").fill("ops")
    page.get_by_label("Password").fill("a-long-pass-phrase")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/$"))


def _job_succeeded(page, timeout: int = 60_000) -> Job:
    page.wait_for_selector(FINISHED, timeout=timeout)
    job = Job.objects.get(pk=int(re.search(r"/jobs/(\d+)/", page.url).group(1)))
    assert job.state == JobState.SUCCEEDED, (job.kind, job.state, job.message)
    return job


def test_an_operator_walks_every_row_at_size(roots, celery_worker, page, django_user_model, make_bank, monkeypatch):
    from banks.services import bulk_jobs

    big = make_bank(BIG)
    _fill(big, SIZE)
    # Pages count exactly up to a bound and estimate above it; the bound is lowered under the bank's size so
    # the walk sees the estimate path a huge bank takes.
    monkeypatch.setattr("banks.selectors.memories.COUNT_CAP", 1000)
    _login(page, django_user_model)

    _row1_export_to_the_server_finishes_with_progress(page, roots)
    _row2_resume_and_cancel_sit_at_the_top(page, big)
    _row3_a_downloaded_whole_bank_archive_restores_through_the_transfer_page(page, make_bank)
    people = bank_update(bank=make_bank(PEOPLE), actor="test", dedup_threshold=0.85)
    _row4_a_look_alike_is_stored_and_a_true_duplicate_offers_store_anyway(page, people)
    _row5_clusters_do_not_mix_people_and_merging_is_confirmed(page)
    _row6_the_import_preview_counts_what_the_run_does(page, roots, make_bank)
    _row7_correcting_berlin_to_tokyo_changes_the_entities(page, people)
    monkeypatch.setattr(bulk_jobs, "JOB_MIN", 1000)  # the web side hands 3,000 rows to the worker as a job
    _row8_bulk_tag_runs_as_a_set_based_job(page, big)
    _row9_numbers_agree_and_axis_labels_fit(page, big)
    _row10_playground_phone_metadata_and_ask(page, big)

    csp = [e for e in page.csp_errors if "Content Security Policy" in e]
    assert not csp, csp


def _row1_export_to_the_server_finishes_with_progress(page, roots: Path) -> None:
    page.goto(f"/banks/{BIG}/transfer/")
    page.get_by_label("File name").fill("big.ama.jsonl")
    page.get_by_role("button", name="Export to the server").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/"))
    job = _job_succeeded(page)
    assert job.kind == "export" and job.result["exported_count"] == SIZE
    # It says how far it got: every line, even when it ends before its pulse writes again.
    assert job.progress_done == job.progress_total == SIZE
    bar = page.locator("#job-status progress")
    assert bar.get_attribute("value") == bar.get_attribute("max") == str(SIZE)
    assert f"{SIZE} of {SIZE} (100%)" in page.locator("#job-status").inner_text()
    lines = (bank_folder(roots, BIG) / "big.ama.jsonl").read_text().splitlines()
    assert len(lines) == SIZE + 1  # the header, then every memory
    shot(page, "walk-01-export")


def _row2_resume_and_cancel_sit_at_the_top(page, big: Bank) -> None:
    """A job with a thousand problem lines: what the operator can do comes before them, in the first screen."""
    errors = [{"line": i, "reason": "missing id, text"} for i in range(1, 1001)]
    now = timezone.now()
    failed = Job.objects.create(kind="import", bank=big, state=JobState.FAILED, errors=errors, started_at=now,
                                finished_at=now, message="the worker stopped", params={"path": "x.jsonl"})
    queued = Job.objects.create(kind="import", bank=big, state=JobState.QUEUED, errors=errors, params={"path": "x"})
    page.goto(f"/banks/{BIG}/jobs/{failed.pk}/")
    resume = page.get_by_role("button", name="Resume after the last committed batch")
    first_error = page.locator("#job-status details table")
    assert resume.bounding_box()["y"] < min(900, first_error.bounding_box()["y"])
    page.goto(f"/banks/{BIG}/jobs/{queued.pk}/")
    cancel = page.get_by_role("button", name="Cancel")
    assert cancel.bounding_box()["y"] < 900
    cancel.click()
    page.wait_for_selector(".job-state:text('cancelled')")
    assert Job.objects.get(pk=queued.pk).state == JobState.CANCELLED
    shot(page, "walk-02-cancelled")


def _row3_a_downloaded_whole_bank_archive_restores_through_the_transfer_page(page, make_bank) -> None:
    source = make_bank("ops-rich")
    rich_bank(source)
    page.goto("/banks/ops-rich/transfer/")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download the whole bank").click()
    archive = Path(download.value.path())
    name = download.value.suggested_filename
    assert ".mhba.jsonl" in name, name
    copy = make_bank("ops-restored")
    upload = archive.with_name(name)
    shutil.copy(archive, upload)
    page.goto("/banks/ops-restored/transfer/")
    page.get_by_label(re.compile(r"^File \(up to")).set_input_files(str(upload))
    page.get_by_role("button", name="Upload").click()
    page.locator("tr", has_text=name).get_by_role("button", name="Preview import").click()
    preview = _job_succeeded(page)
    assert not preview.errors, preview.errors[:3]  # read as a whole-bank archive, not as AMA lines
    page.get_by_role("button", name="Run this import").click()
    page.wait_for_url(lambda url: f"/jobs/{preview.pk}/" not in url)
    run = _job_succeeded(page)
    assert not run.errors
    for kind, _, _ in TABLES:  # every table, row by row
        assert table(copy, kind) == table(source, kind), kind
    shot(page, "walk-03-restored")


def _retain(page, text: str) -> None:
    page.locator("details", has_text="Retain a memory").locator("summary").click() if not page.get_by_label(
        "Text", exact=True).is_visible() else None
    page.get_by_label("Text", exact=True).fill(text)
    page.get_by_role("button", name="Retain", exact=True).click()
    page.wait_for_load_state()


def _row4_a_look_alike_is_stored_and_a_true_duplicate_offers_store_anyway(page, people: Bank) -> None:
    page.goto(f"/banks/{PEOPLE}/memories/")
    _retain(page, NOAH)
    page.wait_for_selector("text=Retained as")
    _retain(page, LIAM)  # another person's look-alike: stored, whatever the cosine
    page.wait_for_selector("text=Retained as")
    assert Memory.objects.filter(bank=people).count() == 2
    _retain(page, NOAH_AGAIN)  # the same fact reordered: refused, with the holder, its text and similarity
    refusal = page.locator("#retain-refused")
    refusal.wait_for()
    noah = Memory.objects.get(bank=people, text=NOAH)
    said = refusal.inner_text()
    assert noah.memory_id in said and NOAH in said and re.search(r"a memory 0\.\d{3} similar", said), said
    assert page.get_by_label("Text", exact=True).input_value() == NOAH_AGAIN  # the typed text is kept
    refusal.get_by_role("button", name="Store anyway").click()
    page.wait_for_selector("text=Retained as")
    assert Memory.objects.filter(bank=people).count() == 3
    shot(page, "walk-04-store-anyway")


def _row5_clusters_do_not_mix_people_and_merging_is_confirmed(page) -> None:
    page.goto(f"/banks/{PEOPLE}/duplicates/?threshold=0.85")
    page.get_by_role("button", name="Find again").click()
    page.wait_for_selector("form.cluster", timeout=60_000)
    cards = page.locator("form.cluster")
    assert cards.count() == 1
    card = cards.first
    text = card.inner_text()
    assert "Noah Smith" in text and "Liam Brown" not in text  # never the other person's look-alike
    assert re.match(r"0\.\d{3}|1\.000", card.locator("li.pair .badge").first.inner_text())
    assert not card.get_by_role("button", name="Merge cluster").is_visible()  # behind "Merge…"
    card.locator("summary", has_text="Merge").click()
    card.get_by_label(re.compile("these say the same thing")).check()
    card.get_by_role("button", name="Merge cluster").click()
    page.wait_for_selector("text=Merged 1 into")
    shot(page, "walk-05-merged")


def _counts_shown(page) -> dict[str, str]:
    """The counts a job page shows, label to number ("would link" -> "6")."""
    return dict(t.strip().rsplit(" ", 1) for t in page.locator("#job-status .tag").all_inner_texts())


def _row6_the_import_preview_counts_what_the_run_does(page, roots: Path, make_bank) -> None:
    make_bank("ops-amplihack")
    shutil.copy(FIXTURES / "amplihack_hierarchical.json", bank_folder(roots, "ops-amplihack"))
    page.goto("/banks/ops-amplihack/transfer/")
    page.locator("tr", has_text="amplihack_hierarchical.json").get_by_role("button", name="Preview import").click()
    preview = _job_succeeded(page)
    would = _counts_shown(page)
    page.get_by_role("button", name="Run this import").click()
    page.wait_for_url(lambda url: f"/jobs/{preview.pk}/" not in url)
    run = _job_succeeded(page)
    assert preview.counts == run.counts and run.counts.get("links", 0) > 0, (preview.counts, run.counts)
    assert "would link" in would and would["would link"] == str(run.counts["links"]), would
    shot(page, "walk-06-import-run")


def _row7_correcting_berlin_to_tokyo_changes_the_entities(page, people: Bank) -> None:
    memory = memory_retain(bank=people, text="Alice moved to Berlin for the new office.", actor="test").memory
    page.goto(f"/banks/{PEOPLE}/memories/{memory.memory_id}/")
    assert page.locator(".entity-edit").get_by_text("Berlin · LOCATION").count() == 1
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("Text", exact=True).fill("Alice moved to Tokyo for the new office.")
    page.get_by_role("button", name="Save").click()
    page.wait_for_selector("text=Saved.")
    entities = page.locator(".entity-edit").inner_text()
    assert "Tokyo · LOCATION" in entities and "Berlin" not in entities
    assert Entity.objects.get(bank=people, name="Berlin").mention_count == 0
    shot(page, "walk-07-tokyo")


def _row8_bulk_tag_runs_as_a_set_based_job(page, big: Bank) -> None:
    page.goto(f"/banks/{BIG}/")  # the overview keeps its numbers a minute: its cache is warm now
    assert page.locator("a.tag", has_text="reviewed").count() == 0
    page.goto(f"/banks/{BIG}/memories/")
    toggle = page.get_by_role("button", name="Bulk actions")  # a drawer on narrow screens only
    if toggle.is_visible():
        toggle.click()
    page.get_by_label("Bulk action").select_option("tag")
    page.get_by_label("Tag", exact=True).fill("reviewed")
    page.get_by_label("Apply to").select_option("all")
    page.get_by_role("button", name="Preview").click()
    page.wait_for_selector("#bulk-confirm")
    assert f"will change {SIZE} memories" in page.locator("#bulk-confirm").inner_text()
    page.get_by_role("button", name=f"Yes, tag {SIZE}").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/"))
    job = _job_succeeded(page)
    assert job.kind == "bulk" and job.counts["touched"] == SIZE and job.progress_done == SIZE
    assert Memory.objects.filter(bank=big, tags__contains=["reviewed"]).count() == SIZE
    shot(page, "walk-08-bulk-job")
    # The operator's own change shows on the next load, not a minute later.
    page.goto(f"/banks/{BIG}/")
    assert page.locator("a.tag", has_text="reviewed").inner_text().strip() == f"reviewed · {SIZE}"


def _row9_numbers_agree_and_axis_labels_fit(page, big: Bank) -> None:
    estimate, exact = bank_memory_count(big)
    assert not exact
    about = f"about {round(estimate, -(len(str(estimate)) - 2)):,}"
    page.goto("/")
    assert about in page.locator("main").inner_text()
    page.goto(f"/banks/{BIG}/")
    assert page.locator(".grid .card .stat").first.inner_text().strip() == about
    # Every y-axis label of every chart lies inside its picture.
    charts = page.locator(".charts svg")
    assert charts.count() >= 1
    outside = page.evaluate("""() => [...document.querySelectorAll('.charts svg')].flatMap(svg => {
        const box = svg.getBoundingClientRect();
        return [...svg.querySelectorAll('text')].map(t => [t.textContent, t.getBoundingClientRect()])
          .filter(([, r]) => r.left < box.left - 0.5 || r.right > box.right + 0.5).map(([s]) => s);
    })""")
    assert not outside, outside
    page.goto(f"/banks/{BIG}/memories/")
    assert f"{about} memories match" in page.locator(".list-summary").inner_text()
    # A search says the same total on every page.
    totals = []
    for number in (1, 2, 3):
        page.goto(f"/banks/{BIG}/memories/?q=memory+about+subject+7&page={number}")
        found = re.search(r"of (\d+) candidates", page.locator(".list-summary").inner_text())
        assert found, page.locator(".list-summary").inner_text()
        totals.append(found.group(1))
    assert len(set(totals)) == 1, totals
    shot(page, "walk-09-numbers")


def _members_are_managed_by_the_banks_admin(page, big: Bank) -> None:
    """Roles in the UI (the issue's item 8): add an operator, make them admin, remove them after a confirmation."""
    from django.contrib.auth import get_user_model

    from banks.models import BankMembership

    for name in ("petra", "ivan"):
        get_user_model().objects.create_user(username=name, password=f"pw-{name}-12345")
    page.goto(f"/banks/{BIG}/members/")

    def add(name: str, role: str) -> None:
        page.get_by_label("Operator's user name").fill(name)
        page.get_by_label("Role", exact=True).select_option(role)
        page.get_by_role("button", name="Add", exact=True).click()
        page.wait_for_selector(f"text={name} is {role} on {BIG}.")

    def remove(name: str) -> None:
        row = page.locator(f"tr[data-member={name}]")
        assert not row.get_by_role("button", name=f"Remove {name}").is_visible()  # behind "Remove…"
        row.locator("summary", has_text="Remove").click()
        row.get_by_role("button", name=f"Remove {name}").click()
        page.wait_for_load_state()

    add("petra", "curator")
    page.get_by_label("Role of petra").select_option("admin")
    page.locator("tr[data-member=petra]").get_by_role("button", name="Change role").click()
    page.wait_for_selector(f"text=petra is admin on {BIG}.")
    assert not axe_violations(page), axe_violations(page)
    remove("petra")  # the bank's only admin stays
    page.wait_for_selector(f"text=petra is the last admin of bank {BIG}: make another operator admin first")
    add("ivan", "admin")
    remove("petra")
    page.wait_for_selector(f"text=petra no longer has a role on {BIG}.")
    assert dict(BankMembership.objects.filter(bank=big).values_list("user__username", "role")) == {"ivan": "admin"}
    shot(page, "walk-members")


def _row10_playground_phone_metadata_and_ask(page, big: Bank) -> None:
    # Metadata as JSON, not a Python repr.
    memory = Memory.objects.get(bank=big, memory_id="k7")
    page.goto(f"/banks/{BIG}/memories/k7/")
    assert json.loads(page.locator("pre.json code").inner_text()) == memory.metadata
    # Ask without a language model claims no confidence.
    page.goto(f"/banks/{BIG}/reflect/?q=memory+7+about+subject+7")
    assert "no language model: no confidence" in page.locator("main").inner_text()
    assert "confidence 100" not in page.locator("main").inner_text()
    # The playground compares A with B in one table, a row per rank, moves marked.
    query = "q=memory+about+subject+7&n=10&compare=1&a_arms=semantic&b_arms=keyword"
    page.goto(f"/banks/{BIG}/recall/?{query}")
    assert page.locator("#playground-results table").count() == 1
    assert page.locator("table.compare tbody tr").count() == 10
    assert page.locator("table.compare .rank-move").count() >= 1
    # On a phone: nothing wider than the screen, and every card keeps its column's name.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/banks/{BIG}/recall/?{query}")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    first_b = page.locator("table.compare tbody tr").first.locator("td[data-run=B]")
    assert first_b.get_attribute("data-label").startswith("B: keyword")
    shot(page, "walk-10-playground-phone")
    page.goto(f"/banks/{BIG}/memories/")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    labels = page.locator("#memory-results tbody tr").first.locator("td[data-label]")
    assert "Tags" in [labels.nth(i).get_attribute("data-label") for i in range(labels.count())]
    page.goto(f"/banks/{BIG}/members/")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.set_viewport_size({"width": 1280, "height": 900})
    _members_are_managed_by_the_banks_admin(page, big)
    # The graph: after a search, the entity found can still be linked to the bank's other entities.
    page.goto(f"/banks/{PEOPLE}/graph/")
    page.get_by_label("Find entities").fill("Tokyo")
    page.get_by_role("button", name="Search").click()
    page.get_by_role("link", name="Tokyo", exact=True).click()
    page.wait_for_selector("#ego-h")
    assert page.locator("#l-b option").count() >= 1  # it listed only the search's hits less Tokyo itself
    shot(page, "walk-10-graph")
