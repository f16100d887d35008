"""Consolidation controls on the observations page: the backlog (what a run would read), "run now"
queuing the consolidation job through the service the API uses (refused while one is queued), the last
run (when, how long, what it did); and an observation's page with its history from the audit events."""

from __future__ import annotations

import pytest

from banks.models import BankMembership, BankRole, Job, JobState
from banks.selectors.consolidation import consolidation_backlog_rows
from banks.services.memories import memory_retain
from banks.services.memory_edit import memory_update
from banks.services.observations import observation_create, observation_invalidate, observation_update

pytestmark = pytest.mark.django_db


@pytest.fixture
def jazz_bank(bank):
    for text in ("Alice plays jazz piano on Fridays.", "Alice plays jazz piano every Friday night.",
                 "Alice's jazz piano lessons are on Friday.", "The invoice service runs in Berlin."):
        memory_retain(bank=bank, text=text, actor="test", near_dedup=False)
    return bank


def _page(client, bank):
    return client.get(f"/banks/{bank.bank_id}/observations/").content.decode()


def test_run_now_queues_one_consolidation_shows_its_outcome_and_shrinks_the_backlog(
        admin_client, jazz_bank, django_capture_on_commit_callbacks):
    page = _page(admin_client, jazz_bank)
    assert "4 memories no observation cites yet" in page and "Last run</dt><dd>never" in page
    with django_capture_on_commit_callbacks(execute=True):  # the eager worker runs the queued task
        response = admin_client.post(f"/banks/{jazz_bank.bank_id}/observations/consolidate")
    assert response.status_code == 302
    job = Job.objects.get(bank=jazz_bank, kind="consolidation")
    assert job.state == JobState.SUCCEEDED and job.created_by.startswith("user:")
    assert job.counts["created"] >= 1 and job.counts["memories_scanned"] == 4
    page = _page(admin_client, jazz_bank)
    left = consolidation_backlog_rows(jazz_bank).count()
    assert left < 4 and f"{left} memor" in page
    assert f"job {job.pk}</a> succeeded" in page and f"{job.counts['created']} created" in page and "took" in page


def test_run_now_is_refused_while_one_is_queued(admin_client, jazz_bank):
    queued = Job.objects.create(bank=jazz_bank, kind="consolidation", state=JobState.QUEUED, created_by="user:x")
    page = _page(admin_client, jazz_bank)
    assert f"job {queued.pk}</a> queued" in page and "disabled" in page
    response = admin_client.post(f"/banks/{jazz_bank.bank_id}/observations/consolidate", follow=True)
    assert "Not started: a consolidation of bank" in response.content.decode()
    assert Job.objects.filter(bank=jazz_bank, kind="consolidation").count() == 1


def test_a_viewer_sees_the_controls_but_may_not_run(operator_client, operator, jazz_bank):
    BankMembership.objects.create(user=operator, bank=jazz_bank, role=BankRole.VIEWER)
    page = _page(operator_client, jazz_bank)
    assert "Backlog" in page and "Run consolidation now" not in page
    assert operator_client.post(f"/banks/{jazz_bank.bank_id}/observations/consolidate").status_code == 403
    assert not Job.objects.filter(kind="consolidation").exists()


def test_an_observations_page_shows_its_history(admin_client, bank, make_bank):
    a = memory_retain(bank=bank, text="Alice plays jazz piano on Fridays.", actor="test").memory
    b = memory_retain(bank=bank, text="Alice takes jazz lessons.", actor="test").memory
    obs = observation_create(bank=bank, text="Alice loves jazz.", actor="curator-1", source_ids=[a.memory_id])
    observation_update(observation=obs, actor="consolidation-run", add_source_ids=[b.memory_id],
                       reason="consolidation")
    memory_update(memory=a, actor="curator-2", text="Alice plays blues piano on Fridays.")  # invalidates it
    url = f"/banks/{bank.bank_id}/observations/{obs.observation_id}/"
    page = admin_client.get(url).content.decode()
    history = page[page.index('id="observation-history"'):]
    assert history.index("invalidated (memories") < history.index("updated: evidence +1") \
        < history.index("created with 1 evidence")
    assert "curator-1" in history and "consolidation-run" in history and "source memory edited" in history
    assert "invalidated" in page[:page.index('id="observation-history"')]
    # The memory page links its citing observation to that page.
    memory_page = admin_client.get(f"/banks/{bank.bank_id}/memories/{b.memory_id}/").content.decode()
    assert url in memory_page
    # Another bank's observation is not found under this bank.
    other = make_bank("user-bob")
    theirs = observation_create(bank=other, text="Bob keeps bees.", actor="test")
    assert admin_client.get(f"/banks/{bank.bank_id}/observations/{theirs.observation_id}/").status_code == 404


def test_an_operator_invalidation_is_in_the_history(admin_client, bank):
    obs = observation_create(bank=bank, text="Alice loves jazz.", actor="test")
    observation_invalidate(observation=obs, actor="user:olga", reason="no longer true")
    page = admin_client.get(f"/banks/{bank.bank_id}/observations/{obs.observation_id}/").content.decode()
    assert "no longer true" in page and "user:olga" in page
