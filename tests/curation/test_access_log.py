"""The per-memory access log: recall, reflect and history over REST and MCP, and an operator's search,
each note which memory was read, by whom, when and through which surface; the memory page shows the
reads newest first a page at a time and exports them; another bank's log is not found; old rows are
pruned a chunk at a time."""

from __future__ import annotations

import asyncio
import csv
import io
from datetime import timedelta

import pytest
from django.utils import timezone

from banks.access import ROLE_PERMISSIONS
from banks.models import BankMembership, BankRole, MemoryAccess
from banks.selectors.access_log import memory_access_page
from banks.services.access_log import access_log_prune
from banks.services.bank_removal import bank_remove_rows
from banks.services.memories import memory_retain
from banks.services.usage import usage_record_recall
from memoryhub.readers import current_reader, reading_as
from tests.conftest import ApiClient
from tests.fakes import mcp_url, session_calls  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def jazz(bank):
    return memory_retain(bank=bank, text="Alice Smith plays jazz piano every Friday.", actor="test").memory


def _reads(memory):
    return list(MemoryAccess.objects.filter(bank_id=memory.bank_id, memory_id=memory.memory_id).order_by("id"))


def test_recall_reflect_and_history_over_rest_note_the_token(bank, jazz, make_token):
    api = ApiClient(make_token())
    assert api.post("/v1/recall", {"bank_id": bank.bank_id, "query": "jazz piano"}).status_code == 200
    assert api.post("/v1/reflect", {"bank_id": bank.bank_id, "query": "What does Alice play?"}).status_code == 200
    assert api.post("/v1/history", {"bank_id": bank.bank_id, "query": "jazz piano",
                                    "as_of": timezone.now().isoformat()}).status_code == 200
    reads = _reads(jazz)
    assert [r.kind for r in reads] == ["recall", "reflect", "history"]
    assert {r.surface for r in reads} == {"api"} and all(r.reader.startswith("token:") for r in reads)
    # The request's reader ended with it.
    assert current_reader().surface == "internal"


def test_mcp_recall_is_noted_as_mcp(mcp_url, make_bank, make_token):  # noqa: F811
    bank = make_bank("user-alice")
    jazz = memory_retain(bank=bank, text="Alice Smith plays jazz piano every Friday.", actor="test").memory
    _, (answer,) = asyncio.run(session_calls(mcp_url, make_token(), [
        ("memory_recall", {"bank_id": bank.bank_id, "query": "jazz piano"})]))
    assert answer["hits"]
    (read,) = _reads(jazz)
    assert (read.kind, read.surface) == ("recall", "mcp") and read.reader.startswith("token:")


def test_the_agent_search_tool_over_rest_is_noted(bank, jazz, make_token):
    api = ApiClient(make_token())
    answer = api.post("/v1/agent/memory_search", {"bank_id": bank.bank_id, "query": "jazz"})
    assert answer.status_code == 200 and answer.json()["results"]
    (read,) = _reads(jazz)
    assert (read.kind, read.surface) == ("search", "api") and read.reader.startswith("token:")


def test_one_recall_writes_each_memory_once(bank, jazz):
    hit = type("Hit", (), {"bank_id": bank.bank_id, "memory_id": jazz.memory_id, "layer": "fact", "score": 1.0})
    usage_record_recall([bank], [hit, hit])
    assert len(_reads(jazz)) == 1 and _reads(jazz)[0].reader == "system"


def test_the_memory_page_shows_reads_newest_first_paged_and_exports_them(operator_client, operator, bank, jazz):
    BankMembership.objects.create(user=operator, bank=bank, role=BankRole.VIEWER)
    # The operator's own search is a read too.
    page = operator_client.get(f"/banks/{bank.bank_id}/memories/", {"q": "jazz piano"})
    assert page.status_code == 200
    (search,) = _reads(jazz)
    assert (search.kind, search.surface, search.reader) == ("search", "ui", "user:olga")
    now = timezone.now()
    MemoryAccess.objects.bulk_create(
        MemoryAccess(bank_id=bank.pk, memory_id=jazz.memory_id, at=now - timedelta(hours=i), kind="recall",
                     surface="api", reader=f"token:bot{i:02d}") for i in range(1, 30))
    html = operator_client.get(f"/banks/{bank.bank_id}/memories/{jazz.memory_id}/").content.decode()
    assert "Reads" in html and html.index("user:olga") < html.index("token:bot01") < html.index("token:bot02")
    assert "token:bot25" not in html and "Older reads" in html  # 20 a page
    first = memory_access_page(bank, jazz.memory_id)
    older = operator_client.get(f"/banks/{bank.bank_id}/memories/{jazz.memory_id}/access",
                                {"before": first.next_cursor}).content.decode()
    assert "token:bot25" in older and "token:bot29" in older and "token:bot05" not in older
    # A mangled cursor starts from the newest, never a 500.
    assert operator_client.get(f"/banks/{bank.bank_id}/memories/{jazz.memory_id}/access",
                               {"before": "x~y"}).status_code == 200
    response = operator_client.get(f"/banks/{bank.bank_id}/memories/{jazz.memory_id}/access.csv")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0] == ["time", "kind", "surface", "reader", "bank", "memory"] and len(rows) == 31
    assert rows[1][3] == "user:olga" and rows[-1][3] == "token:bot29"


def test_another_banks_log_is_not_found(operator_client, operator, make_bank, bank, jazz):
    other = make_bank("user-bob")
    theirs = memory_retain(bank=other, text="Bob keeps bees.", actor="test").memory
    BankMembership.objects.create(user=operator, bank=bank, role=BankRole.VIEWER)
    for suffix in ("access", "access.csv"):
        # Bob's memory asked for under Alice's bank, and Bob's bank itself (no grant): both 404.
        assert operator_client.get(f"/banks/{bank.bank_id}/memories/{theirs.memory_id}/{suffix}").status_code == 404
        assert operator_client.get(f"/banks/{other.bank_id}/memories/{theirs.memory_id}/{suffix}").status_code == 404


def test_old_reads_are_pruned_in_chunks_and_go_with_their_bank(settings, bank, jazz):
    settings.MEMORYHUB_ACCESS_LOG_DAYS = 30
    now = timezone.now()
    MemoryAccess.objects.bulk_create(
        MemoryAccess(bank_id=bank.pk, memory_id=jazz.memory_id, at=now - timedelta(days=31 + i % 3), kind="recall",
                     surface="api", reader="old") for i in range(25))
    MemoryAccess.objects.create(bank_id=bank.pk, memory_id=jazz.memory_id, at=now - timedelta(days=1),
                                kind="recall", surface="api", reader="recent")
    assert access_log_prune(chunk=10) == 25
    assert [r.reader for r in _reads(jazz)] == ["recent"]
    bank_remove_rows(bank=bank, actor="test")
    assert not MemoryAccess.objects.exists()


def test_a_zero_retention_records_nothing(settings, bank, jazz):
    settings.MEMORYHUB_ACCESS_LOG_DAYS = 0
    with reading_as("user:olga", "ui"):
        hit = type("Hit", (), {"bank_id": bank.bank_id, "memory_id": jazz.memory_id, "layer": "fact", "score": 1.0})
        usage_record_recall([bank], [hit])
    assert _reads(jazz) == []


def test_roles_that_read_see_the_log(client, django_user_model, bank, jazz):
    for role in (BankRole.VIEWER, BankRole.CURATOR, BankRole.ADMIN):
        assert "read" in ROLE_PERMISSIONS[role]
        user = django_user_model.objects.create_user(username=f"u-{role}", password="pw")
        BankMembership.objects.create(user=user, bank=bank, role=role)
        client.force_login(user)
        assert client.get(f"/banks/{bank.bank_id}/memories/{jazz.memory_id}/access").status_code == 200
