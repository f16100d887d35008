"""Webhook delivery holds no transaction open while the text is embedded, and a failed retain takes the
delivery back, so the sender's retry is accepted."""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.db import connection, connections

from banks.live.webhooks import sign
from banks.models import Bank, Memory, WebhookDelivery, WebhookSource
from banks.services.banks import bank_create
from tests.fakes import SlowProvider

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "s3cret-slow"


def _post(body: bytes):  # noqa: ANN202
    from django.test import Client

    stamp = str(int(time.time()))
    return Client().post("/v1/ingest/webhook/slow", body, content_type="application/json",
                         HTTP_X_WEBHOOK_TIMESTAMP=stamp, HTTP_X_WEBHOOK_SIGNATURE=sign(SECRET, stamp, body))


def test_a_delivery_embeds_outside_any_transaction(slow_embeddings: SlowProvider):
    bank = bank_create(bank_id="hooks-slow", actor="test")
    Bank.objects.filter(pk=bank.pk).update(embedding_provider=slow_embeddings.spec)
    WebhookSource.objects.create(source_id="slow", bank=bank, secret=SECRET)
    open_during_embedding: list[int] = []

    def watch() -> None:
        slow_embeddings.requested.wait(timeout=30)
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND state = 'idle in transaction' AND pid <> pg_backend_pid()")
            open_during_embedding.append(cursor.fetchone()[0])
        connections["default"].close()

    slow_embeddings.requested.clear()
    watcher = threading.Thread(target=watch)
    watcher.start()
    answer = _post(json.dumps({"content": "Acme renewed its contract for 2027."}).encode())
    watcher.join(timeout=60)
    assert answer.status_code == 200, answer.content
    assert answer.json()["stored"] is True
    assert open_during_embedding == [0]
    connection.close()


def test_a_refused_retain_takes_its_delivery_back(bank_for_hooks):
    body = json.dumps({"content": "x" * 10}).encode()
    source = WebhookSource.objects.get(source_id="slow")
    first = _post(json.dumps({"content": ""}).encode())
    assert first.status_code == 400
    assert not WebhookDelivery.objects.filter(source=source).exists()
    assert _post(body).status_code == 200 and Memory.objects.filter(bank_id=source.bank_id).count() == 1


@pytest.fixture
def bank_for_hooks():
    bank = bank_create(bank_id="hooks-plain", actor="test")
    WebhookSource.objects.create(source_id="slow", bank=bank, secret=SECRET)
    return bank
