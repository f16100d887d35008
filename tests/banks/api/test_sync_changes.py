"""Sync push and the changes feed: a client keeps a local copy of a bank and it matches."""

from __future__ import annotations

import hashlib
import uuid

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from banks.models import Memory
from banks.services.banks import bank_create
from banks.services.forget import memory_forget
from banks.services.sync import sync_push

pytestmark = pytest.mark.django_db

B = "user-alice"
PUSH = f"/v1/banks/{B}/sync/push"
CHANGES = f"/v1/banks/{B}/changes"


@pytest.fixture(autouse=True)
def no_settle(settings):
    settings.MEMORYHUB_CHANGES_SETTLE_SECONDS = 0


def _record(rid, text, **extra):
    return {"id": rid, "text": text, **extra}


def test_push_answers_record_by_record_and_is_idempotent(api, bank):
    text = "Alice keeps her notes in Markdown."
    batch = [
        _record("note-0001", text, tags=["notes"], content_hash="sha256:" + hashlib.sha256(text.encode()).hexdigest()),
        _record("note-0002", "Alice reviews pull requests on Fridays.", occurred_at="2026-05-01T09:00:00"),
        _record("note-0003", text),
        _record("bad", "too short an id"),
        _record("note-0005", "x", content_hash="sha256:" + "0" * 64),
        _record("note-0006", "   "),
        _record("note-0007", "meta", metadata={"nested": {"no": 1}}),
    ]
    answer = api.post(PUSH, {"records": batch})
    assert answer.status_code == 200, answer.content
    results = answer.json()["results"]
    assert [r["status"] for r in results] == ["stored", "stored", "duplicate", "rejected", "rejected", "rejected",
                                              "rejected"]
    assert results[2]["duplicate_of"] == "note-0001"
    assert "content_hash does not match" in results[4]["reason"] and "8-64" in results[3]["reason"]
    assert Memory.objects.get(memory_id="note-0002").occurred_at.isoformat() == "2026-05-01T09:00:00+00:00"
    again = api.post(PUSH, {"records": batch[:2]}).json()["results"]
    assert [r["status"] for r in again] == ["unchanged", "unchanged"]
    # Memory text is immutable (Astrocyte's gateway): new text under a held id is refused, nothing changes.
    edited = api.post(PUSH, {"records": [_record("note-0002", "Alice reviews pull requests on Mondays.")]})
    assert edited.json()["results"][0] == {
        "id": "note-0002", "status": "rejected",
        "reason": "id is already in use with different text; memory text is immutable"}
    assert Memory.objects.get(memory_id="note-0002").text.endswith("Fridays.")
    retagged = api.post(PUSH, {"records": [_record("note-0001", text, tags=["other"])]}).json()["results"][0]
    assert retagged == {"id": "note-0001", "status": "unchanged",
                        "reason": "text unchanged; metadata updates are not accepted by push"}
    assert Memory.objects.get(memory_id="note-0001").tags == ["notes"]
    api.post("/v1/forget", {"bank_id": B, "memory_ids": ["note-0002"]})
    back = api.post(PUSH, {"records": [_record("note-0002", "resurrected")]}).json()["results"][0]
    assert back == {"id": "note-0002", "status": "rejected",
                    "reason": "id was forgotten; a forgotten memory can't be pushed again"}
    too_many = api.post(PUSH, {"records": [_record(f"rec-{i:05d}", f"t{i}") for i in range(101)]})
    assert too_many.status_code == 400 and "records" in too_many.json()["detail"]


def test_changes_feed_pages_with_an_opaque_cursor_and_tombstones(api, bank):
    api.post(PUSH, {"records": [_record(f"item-{i:04d}", f"Fact number {i} about Alice.") for i in range(5)]})
    api.post("/v1/forget", {"bank_id": B, "memory_ids": ["item-0001"]})
    seen, cursor, pages = [], None, 0
    while True:
        page = api.get(CHANGES, {"limit": 2, **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.content
        body = page.json()
        assert set(body) == {"changes", "next_cursor", "has_more"}
        seen += body["changes"]
        cursor, pages = body["next_cursor"], pages + 1
        if not body["has_more"]:
            break
    assert pages == 3 and len(seen) == 5
    tombstone = next(c for c in seen if c["id"] == "item-0001")
    assert set(tombstone) == {"id", "bank_id", "changed_at", "deleted"} and tombstone["deleted"] is True
    live = next(c for c in seen if c["id"] == "item-0000")
    assert {"id", "bank_id", "changed_at", "deleted", "text", "occurred_at", "retained_at", "tags", "fact_type",
            "memory_layer", "metadata"} <= set(live)
    # Nothing new after the last cursor; a later change shows up after it.
    assert api.get(CHANGES, {"cursor": cursor}).json() == {"changes": [], "next_cursor": cursor, "has_more": False}
    api.post("/v1/forget", {"bank_id": B, "memory_ids": ["item-0002"], "erase": True})
    after = api.get(CHANGES, {"cursor": cursor}).json()["changes"]
    assert [(c["id"], c["deleted"]) for c in after] == [("item-0002", True)]


def test_erase_purges_content_but_keeps_the_tombstone(api, bank):
    api.post(PUSH, {"records": [_record("secret-01", "Alice's bank PIN is 4321.", tags=["pii"])]})
    assert api.post("/v1/forget", {"bank_id": B, "tags": ["pii"], "erase": True}).status_code == 400
    erased = api.post("/v1/forget", {"bank_id": B, "memory_ids": ["secret-01"], "erase": True})
    assert erased.status_code == 200 and erased.json()["deleted_count"] == 1 and erased.json()["erased_count"] == 1
    row = Memory.objects.get(memory_id="secret-01")
    assert (row.text, row.embedding, row.tags, row.metadata, row.content_hash) == ("", None, [], {}, "")
    assert row.forgotten_at is not None
    assert "4321" not in str(api.post("/v1/recall", {"query": "PIN", "bank_id": B}).json())


def test_changes_refuses_bad_input_and_answers_empty_for_a_new_bank(api, api_for, bank, settings):
    assert api.get(CHANGES, {"cursor": "not-a-cursor"}).status_code == 400
    # Out-of-range page sizes are clamped into 1..1000, as Astrocyte's gateway does.
    assert api.get(CHANGES, {"limit": 0}).status_code == 200
    assert api.get(CHANGES, {"limit": 5000}).status_code == 200
    assert api.get(CHANGES, {"limit": "many"}).status_code == 400
    client = api_for({"user-*": ["read"]})
    assert client.get("/v1/banks/user-new/changes").json() == {"changes": [], "next_cursor": None,
                                                                "has_more": False}
    api.post(PUSH, {"records": [_record("fresh-001", "Alice just said hello.")]})
    settings.MEMORYHUB_CHANGES_SETTLE_SECONDS = 60
    assert api.get(CHANGES).json()["changes"] == []  # too young: held back until it settles


OPS = st.lists(st.tuples(st.sampled_from(["push", "edit", "forget", "erase"]), st.integers(0, 5),
                         st.integers(0, 3)), min_size=1, max_size=12)


@hsettings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_replaying_the_feed_reproduces_the_bank(no_settle, ops):
    from banks.selectors.changes import changes_page

    bank = bank_create(bank_id=f"prop-{uuid.uuid4().hex[:12]}", actor="test")
    words = ["alpha", "bravo", "charlie", "delta"]
    for op, n, variant in ops:
        rid = f"rec-{n:05d}"
        if op in ("push", "edit"):
            text = f"Record {n} says {words[variant]} {'again' if op == 'edit' else ''}".strip()
            sync_push(bank=bank, actor="test", records=[{"id": rid, "text": text}])
        elif Memory.objects.filter(bank=bank, memory_id=rid).exists():
            memory_forget(bank=bank, actor="test", memory_ids=[rid], erase=op == "erase")
    replica: dict[str, str] = {}
    cursor = None
    while True:
        page = changes_page(bank, bank_id=bank.bank_id, cursor=cursor, limit=3, settle_seconds=0)
        for change in page.changes:
            if change["deleted"]:
                replica.pop(change["id"], None)
            else:
                replica[change["id"]] = change["text"]
        cursor = page.next_cursor
        if not page.has_more:
            break
    truth = dict(Memory.objects.live().filter(bank=bank).values_list("memory_id", "text"))
    assert replica == truth
    gone = set(Memory.objects.filter(bank=bank, forgotten_at__isnull=False).values_list("memory_id", flat=True))
    assert not gone & set(replica)
