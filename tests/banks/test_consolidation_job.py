from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from banks.models import Job, Observation
from banks.services.consolidation_jobs import consolidation_start
from banks.services.memories import memory_retain
from memoryhub.errors import Conflict
from tests.worker import wait_for

TEXTS = ("Alice drinks green tea every morning.", "Alice drinks green tea every afternoon.",
         "Bob repairs old bicycles.", "Bob repairs old motorbikes.", "The office closes at six.")


@pytest.mark.worker
def test_consolidation_runs_as_a_job_on_the_worker(celery_worker, make_bank):
    bank = make_bank("user-alice")
    for text in TEXTS:
        memory_retain(bank=bank, text=text, actor="test")
    job = consolidation_start(bank=bank, actor="test")
    with pytest.raises(Conflict, match="already"):
        consolidation_start(bank=bank, actor="test")
    done = wait_for(lambda: Job.objects.filter(pk=job.pk, state__in=Job.FINISHED).first(), timeout=60)
    assert done.state == "succeeded", done.message
    assert done.counts == {"created": 2, "updated": 0, "clusters": 2, "memories_scanned": 5}
    assert done.progress_done == done.progress_total == 5
    assert Observation.objects.filter(bank=bank).count() == 2


@pytest.mark.django_db
def test_the_command_calls_the_same_service(make_bank):
    bank = make_bank("user-alice")
    for text in TEXTS:
        memory_retain(bank=bank, text=text, actor="test")
    out = StringIO()
    call_command("consolidate_observations", "--bank", "user-alice", stdout=out)
    assert "2 groups, 2 observations created" in out.getvalue()
