from __future__ import annotations

import pytest

from banks.models import AuditEvent
from banks.tasks import ping
from tests.worker import wait_for


@pytest.mark.worker
def test_a_real_worker_runs_tasks_against_the_test_database(celery_worker):
    ping.delay("hello")
    event = wait_for(lambda: AuditEvent.objects.filter(action="worker.ping").first(), timeout=60)
    assert event.details == {"value": "hello"}
    assert "banks.ping" in celery_worker.output()
