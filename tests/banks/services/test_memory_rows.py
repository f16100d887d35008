"""The owner of memory rows: every writer keeps a bank's invariants (tier, counters, links, tombstones)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from banks.models import AuditEvent, EntityLink, Memory, MemoryLink
from banks.providers import bank_embedder
from banks.selectors.near_duplicates import nearest_live_memories
from banks.services.bulk import bulk_apply
from banks.services.forget import memory_forget
from banks.services.graph import entity_link_create
from banks.services.memory_edit import memory_update
from banks.services.memory_rows import rows_contexts_rebuild
from banks.services.vector_indexes import bank_vector_index_adopt
from memoryhub.errors import Conflict
from tests.factories import entity, make_bank, make_import, make_link, make_memory, row_invariant_breaks

pytestmark = pytest.mark.django_db


def test_a_bulk_move_into_a_bank_with_its_own_vector_index_takes_its_tier_mentions_and_links():
    source, target = make_bank("move-from"), make_bank("move-to")
    make_memory(target, "Something already in the big bank.")
    bank_vector_index_adopt(target)  # as a big import leaves it
    moved = make_memory(source, "Alice deploys the billing service on Fridays.", entities=["Alice"])
    stays = make_memory(source, "Bob reviews every deploy of the billing service.", entities=["Alice", "Bob"])
    make_link(moved, stays)
    make_link(stays, moved, "follows")

    outcome = bulk_apply(bank=source, rows=Memory.objects.filter(pk=moved.pk), action="move", actor="test",
                         target=target)

    assert (outcome.touched, outcome.skipped) == (1, 0)
    moved = Memory.objects.get(bank=target, pk=moved.pk)  # a reload names the bank, now the target
    assert moved.own_vector_index is True
    # The target's semantic arm finds it by its own text.
    embedder = bank_embedder(target)
    nearest = nearest_live_memories(target, embedder.embed([moved.text])[0], embedder.dimensions, count=1)
    assert nearest and nearest[0][0] == moved.memory_id and nearest[0][1] > 0.999
    assert entity(source, "Alice").mention_count == 1 and entity(target, "Alice").mention_count == 1
    assert not MemoryLink.objects.filter(source=moved).exists() and not MemoryLink.objects.filter(target=moved).exists()
    assert row_invariant_breaks() == {}


def test_overwriting_a_memory_three_times_leaves_one_mention_counted_once():
    bank = make_bank("overwrite")
    for round_ in range(3):
        report = make_import(bank, [("m-1", f"Carol moved to Lisbon (version {round_}).", ["Carol"])],
                             on_conflict="overwrite")
        assert report.imported + report.overwritten == 1
    carol = entity(bank, "Carol")
    assert carol.memoryentity_set.count() == 1 and carol.mention_count == 1
    assert row_invariant_breaks() == {}


def test_erase_and_forget_take_mentions_off_the_counters():
    bank = make_bank("erase-counts")
    erased = make_memory(bank, "Dana signed the lease.", entities=["Dana"])
    make_memory(bank, "Dana paid the deposit.", entities=["Dana"])
    memory_forget(bank=bank, actor="test", memory_ids=[erased.memory_id], erase=True, reason="request")
    assert entity(bank, "Dana").mention_count == 1
    assert row_invariant_breaks() == {}


@pytest.fixture
def tombstone():
    bank = make_bank("tombstones")
    memory = make_memory(bank, "Eve's phone number is 555-0100.")
    memory_forget(bank=bank, actor="test", memory_ids=[memory.memory_id], erase=True, reason="erasure request")
    memory.refresh_from_db()
    return memory


def test_an_erased_memory_cannot_be_edited_through_the_service(tombstone):
    with pytest.raises(Conflict, match=tombstone.memory_id):
        memory_update(memory=tombstone, actor="test", text="Eve's phone number is 555-0199.")
    tombstone.refresh_from_db()
    assert tombstone.text == ""


def test_an_erased_memory_cannot_be_edited_from_the_curation_page(admin_client, tombstone):
    response = admin_client.post(f"/banks/{tombstone.bank.bank_id}/memories/{tombstone.memory_id}/edit",
                                 {"text": "new text", "tags": "", "fact_type": "world", "metadata": "{}"})
    assert response.status_code == 409
    tombstone.refresh_from_db()
    assert tombstone.text == "" and tombstone.tags == []


def test_an_erased_memory_cannot_be_edited_in_the_admin(admin_client, tombstone):
    response = admin_client.post(f"/admin/banks/memory/{tombstone.pk}/change/", {
        "text": "new text", "tags": "", "metadata": "{}", "fact_type": "world",
        "occurred_at_0": "", "occurred_at_1": ""})
    assert response.status_code == 200 and b"tombstone" in response.content
    tombstone.refresh_from_db()
    assert tombstone.text == ""


def test_a_bulk_tag_is_one_statement_per_chunk():
    bank = make_bank("tags-set")
    for i in range(30):
        make_memory(bank, f"Fact number {i} about the warehouse in Porto.")
    with CaptureQueriesContext(connection) as queries:
        outcome = bulk_apply(bank=bank, rows=Memory.objects.filter(bank=bank), action="tag", actor="test",
                             tag="porto")
    assert outcome.touched == 30
    writes = [q["sql"] for q in queries.captured_queries
              if q["sql"].startswith("UPDATE") and q["sql"].split()[1].strip('"') == "banks_memory"]
    assert len(writes) == 1
    assert all("porto" in tags for tags in Memory.objects.filter(bank=bank).values_list("tags", flat=True))
    assert AuditEvent.objects.filter(bank=bank, action="memory.tag").count() == 1
    outcome = bulk_apply(bank=bank, rows=Memory.objects.filter(bank=bank), action="untag", actor="test", tag="porto")
    assert outcome.touched == 30
    assert not Memory.objects.filter(bank=bank, tags__contains=["porto"]).exists()


def _deadlock() -> Exception:
    import psycopg
    from django.db import OperationalError

    try:
        raise OperationalError("deadlock detected") from psycopg.errors.DeadlockDetected("deadlock detected")
    except OperationalError as exc:
        return exc


def test_an_import_batch_that_loses_a_deadlock_is_written_once_more(monkeypatch):
    from portability.services import importer

    bank = make_bank("batch-retry")
    real = importer._Importer._store
    losses = iter([True])

    def store_losing_once(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if next(losses, False):
            raise _deadlock()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(importer._Importer, "_store", store_losing_once)
    report = make_import(bank, [("r-1", "Gina owns the boat.", ["Gina"]), ("r-2", "Hal rents it.", ["Hal"])])
    assert report.imported == 2 and report.duplicates == 0
    assert row_invariant_breaks() == {}


def test_an_import_batch_that_loses_twice_is_a_conflict_to_retry(monkeypatch):
    from portability.services import importer

    bank = make_bank("batch-twice")

    def always_losing(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        raise _deadlock()

    monkeypatch.setattr(importer._Importer, "_store", always_losing)
    with pytest.raises(Conflict, match="retry") as refused:
        make_import(bank, [("r-1", "Gina owns the boat.", ["Gina"])])
    assert refused.value.status == 409
    assert not Memory.objects.filter(bank=bank).exists()


def test_an_import_never_overwrites_an_erased_memory():
    bank = make_bank("no-revival")
    make_import(bank, [("m-1", "Jon's address is 12 Harbour Road.", ["Jon"])])
    memory_forget(bank=bank, actor="test", memory_ids=["m-1"], erase=True, reason="erasure request")
    report = make_import(bank, [("m-1", "Jon's address is 12 Harbour Road.", ["Jon"])], on_conflict="overwrite")
    assert report.overwritten == 0 and report.conflicts == 1
    assert "tombstone" in report.errors[0]["reason"]
    erased = Memory.objects.get(bank=bank, memory_id="m-1")
    assert erased.text == "" and erased.forgotten_at is not None
    assert row_invariant_breaks() == {}


def test_a_bulk_load_gets_the_contexts_a_retain_gives_keeping_its_own_vectors(django_capture_on_commit_callbacks):
    bank = make_bank("fill-contexts")
    for i, (role, text) in enumerate([("user", "Where is the billing runbook?"),
                                      ("assistant", "It lives in the ops wiki under billing."),
                                      ("user", "And who owns it?")]):
        make_memory(bank, text, metadata={"session_id": "s1", "role": role}, memory_id=f"t{i}")
    make_memory(bank, "A note outside any conversation.")
    retained = dict(Memory.objects.filter(bank=bank).values_list("memory_id", "context"))
    assert retained["t1"] and retained["t2"]
    # As a bench's bulk load leaves them (tests may age rows): no contexts, vectors of its own.
    Memory.objects.filter(bank=bank).update(context=None)
    vectors = {m.memory_id: list(m.embedding) for m in Memory.objects.filter(bank=bank)}

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        looked, changed, last = rows_contexts_rebuild(bank=bank, after_pk=0, batch=100, vectors=False)

    assert (looked, changed) == (4, sum(1 for c in retained.values() if c)) and not callbacks
    assert dict(Memory.objects.filter(bank=bank).values_list("memory_id", "context")) == retained
    assert {m.memory_id: list(m.embedding) for m in Memory.objects.filter(bank=bank)} == vectors


def test_a_bulk_move_copies_the_graph_edges_between_the_entities_its_rows_mention():
    source, target = make_bank("graph-from"), make_bank("graph-to")
    moved = make_memory(source, "Alice reports to Bob on the billing team.", entities=["Alice", "Bob", "Carol"])
    make_memory(source, "Dave stays behind with Alice.", entities=["Alice", "Dave"])
    entity_link_create(bank=source, entity_a=entity(source, "Alice").entity_id,
                       entity_b=entity(source, "Bob").entity_id, link_type="reports_to", actor="test",
                       evidence="org chart", confidence=0.8)
    entity_link_create(bank=source, entity_a=entity(source, "Dave").entity_id,
                       entity_b=entity(source, "Alice").entity_id, link_type="works_with", actor="test")

    bulk_apply(bank=source, rows=Memory.objects.filter(pk=moved.pk), action="move", actor="test", target=target)

    copied = list(EntityLink.objects.filter(bank=target).values_list(
        "entity_a__name", "entity_b__name", "link_type", "evidence", "confidence", "entity_a__bank_id",
        "entity_b__bank_id"))
    # Dave's edge has an end the move did not bring: it stays in the source bank only.
    assert copied == [("Alice", "Bob", "reports_to", "org chart", 0.8, target.pk, target.pk)]
    assert EntityLink.objects.filter(bank=source).count() == 2


def test_a_retained_vector_is_stored_as_the_fields_own_formatting_stored_it():
    # row_insert writes the vector in nine digits after rounding it to single precision; components
    # that are not single-precision values already (here: doubles) must still land on the same floats.
    import random

    from pgvector import Vector

    from banks.providers.embeddings import TextVectors
    from banks.services.memories import memory_retain

    bank = make_bank("vector-text")
    embedder = bank_embedder(bank)
    rng = random.Random(7)
    values = [rng.gauss(0, 0.05) for _ in range(embedder.dimensions)]
    vectors = TextVectors(embedder)
    text = "The vector of this memory is given."
    vectors._known[text] = values  # as if this request had embedded it
    stored = Memory.objects.get(bank=bank, memory_id=memory_retain(bank=bank, text=text, actor="test",
                                                                    vectors=vectors).memory_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT embedding::text = %s::vector::text FROM banks_memory WHERE id = %s",
                       [Vector._to_db(values), stored.pk])
        assert cursor.fetchone()[0] is True
