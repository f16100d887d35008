"""The per-process token rows (banks.selectors.token_rows): read once, yet revocation still takes effect."""

from __future__ import annotations

import time
import types

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from banks.models import ApiToken
from banks.selectors import recall_memo
from banks.selectors.token_rows import TOKEN_ROW_SECONDS
from banks.services.tokens import token_revoke
from tests.conftest import ApiClient
from tests.prepared_texts import ran

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("prepared_texts")]

RECALL = {"query": "x", "bank_id": "user-alice"}


def _token_reads(captured: CaptureQueriesContext) -> int:
    return sum("FROM banks_apitoken" in sql for sql in ran([q["sql"] for q in captured.captured_queries]))


def test_a_token_is_read_once_for_several_requests(bank, make_token):
    api = ApiClient(make_token())
    with CaptureQueriesContext(connection) as captured:
        assert api.post("/v1/recall", RECALL).status_code == 200
        assert api.post("/v1/recall", RECALL).status_code == 200
    assert _token_reads(captured) == 1


def test_a_wrong_secret_is_refused_though_its_prefix_is_kept(bank, make_token):
    secret = make_token()
    assert ApiClient(secret).post("/v1/recall", RECALL).status_code == 200
    assert ApiClient(secret[:-2] + ("zz" if not secret.endswith("zz") else "yy")).post("/v1/recall", RECALL).status_code == 401


def test_a_revocation_in_this_process_is_seen_at_once(bank, make_token):
    api = ApiClient(make_token())
    assert api.post("/v1/recall", RECALL).status_code == 200
    token_revoke(token=ApiToken.objects.get(), actor="test")
    assert api.post("/v1/recall", RECALL).status_code == 401


def test_a_revocation_in_another_process_is_seen_within_the_bound(bank, make_token, monkeypatch):
    api = ApiClient(make_token())
    assert api.post("/v1/recall", RECALL).status_code == 200
    # Another web process revokes it: a write this process's memo does not hear of.
    ApiToken.objects.update(revoked_at=timezone.now())
    later = time.monotonic() + TOKEN_ROW_SECONDS + 0.1
    monkeypatch.setattr(recall_memo, "time", types.SimpleNamespace(monotonic=lambda: later))
    assert api.post("/v1/recall", RECALL).status_code == 401
