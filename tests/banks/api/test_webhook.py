"""Webhook ingest: per-source HMAC secrets, replay protection, Astrocyte's response fields."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from banks.live.webhooks import BadSignature, sign, verify
from banks.models import Memory, WebhookSource

pytestmark = pytest.mark.django_db

URL = "/v1/ingest/webhook/crm"
SECRET = "s3cret-crm"


@pytest.fixture
def source(bank):
    return WebhookSource.objects.create(source_id="crm", bank=bank, secret=SECRET, tags=["crm"])


def _post(body: bytes, *, secret=SECRET, timestamp=None, signature=None, content_type="application/json",
          url=URL):
    stamp = str(int(time.time())) if timestamp is None else timestamp
    headers = {"HTTP_X_WEBHOOK_TIMESTAMP": stamp,
               "HTTP_X_WEBHOOK_SIGNATURE": signature or sign(secret, stamp, body)}
    return Client().post(url, body, content_type=content_type, **headers)


def test_a_signed_push_is_retained_with_astrocyte_fields(source):
    body = json.dumps({"content": "Acme renewed its contract for 2027.", "tags": ["renewal"]}).encode()
    answer = _post(body)
    assert answer.status_code == 200, answer.content
    data = answer.json()
    assert set(data) >= {"ok", "error", "stored", "memory_id", "deduplicated", "retain_error"}
    assert data["ok"] is True and data["stored"] is True
    memory = Memory.objects.get(memory_id=data["memory_id"])
    assert memory.bank == source.bank and memory.tags == ["crm", "renewal"] and memory.source == "webhook:crm"
    text = _post(b"Acme asked for a discount.", content_type="text/plain")
    assert text.json()["stored"] is True


def test_replays_and_bad_signatures_are_refused(source):
    body = json.dumps({"text": "Acme opened a ticket."}).encode()
    stamp = str(int(time.time()))
    first = _post(body, timestamp=stamp)
    assert first.status_code == 200
    again = _post(body, timestamp=stamp)
    assert again.status_code == 409 and again.json()["ok"] is False and "replay" in again.json()["detail"]
    stale = _post(body, timestamp=str(int(time.time()) - 3600))
    assert stale.status_code == 401 and "window" in stale.json()["detail"]
    forged = _post(body, secret="wrong")
    assert forged.status_code == 401 and forged.json()["detail"] == "signature does not match"
    unsigned = Client().post(URL, body, content_type="application/json")
    assert unsigned.status_code == 401
    assert Memory.objects.filter(bank=source.bank).count() == 1


def test_unknown_or_disabled_source_is_404_and_bad_bodies_400(source):
    missing = _post(b"{}", url="/v1/ingest/webhook/nope")
    assert missing.status_code == 404 and missing.json()["detail"] == "unknown source"
    source.enabled = False
    source.save()
    assert _post(b'{"content": "x"}').status_code == 404
    source.enabled = True
    source.save()
    assert _post(b"[1, 2]").status_code == 400
    assert _post(b"{not json").status_code == 400
    empty = _post(b'{"content": ""}')
    assert empty.status_code == 400 and empty.json()["ok"] is False


def test_signature_rules_without_a_database():
    body = b'{"content": "x"}'
    good = sign("k", "1000", body)
    assert verify("k", timestamp="1000", signature=good, body=body, now=1100) == good
    for kwargs in ({"timestamp": None}, {"timestamp": "soon"}, {"timestamp": "1000", "now": 2000},
                   {"signature": "sha256=00"}):
        args = {"timestamp": "1000", "signature": good, "body": body, "now": 1100, **kwargs}
        with pytest.raises(BadSignature):
            verify("k", **args)


def test_health_ingest_lists_every_source_with_its_last_delivery_and_error(source, bank, make_bank, api):
    WebhookSource.objects.create(source_id="old-crm", bank=bank, secret="x", enabled=False)
    idle = Client().get("/health/ingest").json()
    assert idle["status"] == "ok" and idle["aggregate"]["healthy"] is True
    by_id = {s["source_id"]: s for s in idle["sources"]}
    assert by_id["crm"]["status"] == "idle" and by_id["old-crm"]["status"] == "disabled"
    assert "bank_id" not in by_id["crm"]  # the probe is public: it names no bank

    assert _post(json.dumps({"content": "Acme renewed."}).encode()).status_code == 200
    ok = {s["source_id"]: s for s in Client().get("/health/ingest").json()["sources"]}["crm"]
    assert ok["status"] == "ok" and ok["healthy"] is True and ok["last_delivery_at"] and ok["delivery_count"] == 1

    assert _post(b"{}", secret="wrong").status_code == 401
    degraded = Client().get("/health/ingest")
    assert degraded.status_code == 200
    body = degraded.json()
    assert body["status"] == "degraded" and body["aggregate"]["healthy"] is False
    assert "crm" in body["aggregate"]["message"]
    failing = {s["source_id"]: s for s in body["sources"]}["crm"]
    assert failing["status"] == "failing" and failing["healthy"] is False and failing["error_count"] == 1
    assert failing["last_error"] == "401 signature does not match" and failing["last_error_at"]
    assert failing["last_delivery_at"] == ok["last_delivery_at"]

    # A later accepted delivery heals it; the last error stays visible.
    assert _post(json.dumps({"content": "Acme paid."}).encode()).status_code == 200
    healed = {s["source_id"]: s for s in Client().get("/health/ingest").json()["sources"]}["crm"]
    assert healed["status"] == "ok" and healed["last_error"] == "401 signature does not match"

    listed = api.get("/v1/admin/sources")
    assert listed.status_code == 200
    admin_view = {s["source_id"]: s for s in listed.json()["sources"]}
    assert admin_view["crm"]["bank_id"] == "user-alice" and admin_view["crm"]["tags"] == ["crm"]
    make_bank("user-bob")
    WebhookSource.objects.create(source_id="bobs", bank=make_bank("user-bob"), secret="y")
    assert "bobs" not in {s["source_id"] for s in api.get("/v1/admin/sources").json()["sources"]}


def test_a_source_signing_the_astrocyte_way_is_accepted(bank):
    """Astrocyte's scheme: sha256=HMAC(secret, raw body) in X-Astrocyte-Signature, or in the header the
    source names (GitHub's X-Hub-Signature-256); the timestamped scheme stays the default."""
    from banks.live.webhooks import sign_body

    WebhookSource.objects.create(source_id="astro", bank=bank, secret=SECRET, signature_scheme="body")
    WebhookSource.objects.create(source_id="gh", bank=bank, secret=SECRET, signature_scheme="body",
                                 signature_header="X-Hub-Signature-256")
    body = json.dumps({"content": "Acme signed the renewal."}).encode()
    signed = Client().post("/v1/ingest/webhook/astro", body, content_type="application/json",
                           HTTP_X_ASTROCYTE_SIGNATURE=sign_body(SECRET, body))
    assert signed.status_code == 200, signed.content
    assert signed.json()["ok"] is True and signed.json()["stored"] is True
    # The same body again is not a refused replay (this scheme carries no time): it is deduplicated.
    again = Client().post("/v1/ingest/webhook/astro", body, content_type="application/json",
                          HTTP_X_ASTROCYTE_SIGNATURE=sign_body(SECRET, body))
    assert again.status_code == 200 and again.json()["deduplicated"] is True
    bare_hex = Client().post("/v1/ingest/webhook/astro", b'{"content": "Acme paid."}', content_type="application/json",
                             HTTP_X_ASTROCYTE_SIGNATURE=sign_body(SECRET, b'{"content": "Acme paid."}')[7:].upper())
    assert bare_hex.status_code == 200
    github = Client().post("/v1/ingest/webhook/gh", b'{"content": "A pull request was merged."}',
                           content_type="application/json",
                           HTTP_X_HUB_SIGNATURE_256=sign_body(SECRET, b'{"content": "A pull request was merged."}'))
    assert github.status_code == 200 and github.json()["stored"] is True

    forged = Client().post("/v1/ingest/webhook/astro", body, content_type="application/json",
                           HTTP_X_ASTROCYTE_SIGNATURE=sign_body("wrong", body))
    assert forged.status_code == 401 and forged.json()["detail"] == "signature does not match"
    missing = Client().post("/v1/ingest/webhook/gh", body, content_type="application/json",
                            HTTP_X_ASTROCYTE_SIGNATURE=sign_body(SECRET, body))
    assert missing.status_code == 401 and "X-Hub-Signature-256" in missing.json()["detail"]
    # A timestamped source does not take the body-only signature (its replay protection stays).
    WebhookSource.objects.create(source_id="crm", bank=bank, secret=SECRET)
    refused = Client().post(URL, body, content_type="application/json",
                            HTTP_X_ASTROCYTE_SIGNATURE=sign_body(SECRET, body))
    assert refused.status_code == 401 and "X-Webhook-Timestamp" in refused.json()["detail"]
    assert Memory.objects.filter(bank=bank).count() == 3


def test_body_signature_rules_without_a_database():
    from banks.live.webhooks import sign_body, verify_body, verify_delivery

    body = b'{"content": "x"}'
    good = sign_body("k", body)
    verify_body("k", signature=good, body=body)
    verify_body("k", signature=" " + good[7:].upper(), body=body)
    assert verify_delivery("k", scheme="body", headers={"X-Astrocyte-Signature": good}, body=body, now=0) is None
    for signature in (None, "", "sha256=00", sign_body("other", body), good + "0"):
        with pytest.raises(BadSignature):
            verify_body("k", signature=signature, body=body)
    with pytest.raises(BadSignature):
        verify_delivery("k", scheme="nope", headers={}, body=body, now=0)
