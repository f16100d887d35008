"""Authentication and permissions for every /v1 route so far: 401, 403, 404, allowed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from banks.models import ApiToken, Bank
from banks.services.tokens import token_revoke
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

ROUTES = [
    ("/v1/retain", {"content": "Alice likes jazz."}, "write"),
    ("/v1/recall", {"query": "jazz"}, "read"),
    ("/v1/history", {"query": "jazz", "as_of": "2030-01-01T00:00:00Z"}, "read"),
    ("/v1/forget", {"memory_ids": ["nope"]}, "forget"),
]
OTHER = {"read", "write", "forget", "admin"}


@pytest.mark.parametrize(("path", "body", "permission"), ROUTES)
class TestEveryRoute:
    def test_no_token_is_401(self, bank, path, body, permission):
        response = ApiClient().post(path, {**body, "bank_id": "user-alice"})
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthenticated"

    def test_bad_token_is_401(self, bank, path, body, permission):
        response = ApiClient("mh_deadbeef_not-a-real-secret").post(path, {**body, "bank_id": "user-alice"})
        assert response.status_code == 401
        assert response.json()["detail"] == "Invalid or revoked token"

    def test_other_bank_is_403_whether_or_not_it_exists(self, make_bank, api_for, path, body, permission):
        make_bank("user-alice")
        make_bank("user-bob")
        client = api_for({"user-alice": sorted(OTHER)})
        existing = client.post(path, {**body, "bank_id": "user-bob"})
        missing = client.post(path, {**body, "bank_id": "user-zed"})
        assert existing.status_code == missing.status_code == 403
        # The answer is the same shape either way, so bank names do not leak.
        assert existing.json()["detail"].replace("user-bob", "X") == missing.json()["detail"].replace("user-zed", "X")

    def test_missing_permission_is_403(self, bank, api_for, path, body, permission):
        client = api_for({"user-alice": sorted(OTHER - {permission})})
        response = client.post(path, {**body, "bank_id": "user-alice"})
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "access_denied"
        assert f"denied '{permission}'" in response.json()["detail"]

    def test_a_granted_bank_never_written_answers_like_an_empty_one(self, db, api_for, path, body, permission):
        client = api_for({"user-*": sorted(OTHER)})
        response = client.post(path, {**body, "bank_id": "user-nobody"})
        assert response.status_code == 200, response.content
        exists = Bank.objects.filter(bank_id="user-nobody").exists()
        # Retain creates the bank on first use (as Astrocyte's implicit banks); reads never do.
        assert exists is (permission == "write")

    def test_allowed(self, bank, api_for, path, body, permission):
        client = api_for({"user-alice": [permission]})
        assert client.post(path, {**body, "bank_id": "user-alice"}).status_code == 200

    def test_x_api_key_header_works_too(self, bank, api_for, path, body, permission):
        client = api_for({"user-alice": [permission]}, header="X-Api-Key")
        assert client.post(path, {**body, "bank_id": "user-alice"}).status_code == 200


def test_revoked_token_is_401(bank, make_token):
    secret = make_token()
    token_revoke(token=ApiToken.objects.get(), actor="test")
    assert ApiClient(secret).post("/v1/recall", {"query": "x", "bank_id": "user-alice"}).status_code == 401


def test_expired_token_is_401(bank, make_token):
    secret = make_token()
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = ApiClient(secret).post("/v1/recall", {"query": "x", "bank_id": "user-alice"})
    assert response.status_code == 401 and response.json()["detail"] == "Token expired"


def test_secret_is_stored_only_as_a_hash(bank, make_token):
    secret = make_token()
    token = ApiToken.objects.get()
    assert secret not in token.secret_hash and len(token.secret_hash) == 64
    assert secret.startswith(f"mh_{token.prefix}_")


def test_wildcard_permission_grants_everything(bank, api_for):
    client = api_for({"user-*": ["*"]})
    assert client.post("/v1/forget", {"bank_id": "user-alice", "scope": "all"}).status_code == 200


def test_unknown_route_is_a_json_404(api):
    response = api.get("/v1/does-not-exist")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found", "error": {"code": "not_found", "message": "Not Found"}}


def test_wrong_method_is_405_with_the_envelope(api):
    response = api.get("/v1/retain")
    assert response.status_code == 405
    assert set(response.json()) >= {"detail", "error"}


def test_request_id_is_echoed(api):
    response = api.client.post("/v1/recall", "{}", content_type="application/json", HTTP_X_REQUEST_ID="abc-123")
    assert response["X-Request-ID"] == "abc-123"


def test_rate_limit_answers_429_with_retry_after(bank, api_for, settings):
    from banks.api.throttling import TokenRateThrottle

    client = api_for({"user-alice": ["read"]})
    TokenRateThrottle.THROTTLE_RATES = {"token": "2/min"}
    try:
        codes = [client.post("/v1/recall", {"query": "x", "bank_id": "user-alice"}).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        refused = client.post("/v1/recall", {"query": "x", "bank_id": "user-alice"})
        body = refused.json()
        assert body["error"]["code"] == "rate_limited" and 0 < body["retry_after"] <= 60
        assert 1 <= int(refused["Retry-After"]) <= 60
    finally:
        from rest_framework.settings import api_settings

        TokenRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
