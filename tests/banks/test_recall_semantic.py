"""Semantic recall with the packaged model: MiniLM embeddings, the reported fallback, banks that keep
their model, BM25 on the keyword arm, per-hit arm ranks in the trace, and the playground page."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from banks.models import Bank, BankMembership, Memory
from banks.providers import embeddings as embeddings_module
from banks.providers.embeddings import build_embedder, embedder_status
from banks.selectors.recall import RecallFilters, recall_memories
from banks.selectors.recall_keyword import idf, keyword_arm
from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def minilm():
    return build_embedder("minilm")


def test_minilm_embeds_meaning_not_just_words(minilm):
    assert minilm.name == "all-MiniLM-L6-v2" and minilm.dimensions == 384
    vectors = np.array(minilm.embed(["what did Caroline do last weekend",
                                     "Caroline went hiking in the mountains on Saturday.",
                                     "The stock market fell sharply."]))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    related, unrelated = vectors[1] @ vectors[0], vectors[2] @ vectors[0]
    # What a plain (unfused, unbatched) implementation of the same model computes for these texts.
    assert related == pytest.approx(0.668, abs=0.01) and unrelated == pytest.approx(0.087, abs=0.01)
    # Batching pads shorter texts; padding must not change a text's vector.
    alone = np.array(minilm.embed(["The stock market fell sharply."]))[0]
    assert np.allclose(alone, vectors[2], atol=1e-5)


def test_a_model_that_cannot_load_is_reported_and_never_replaced(monkeypatch, settings, api):
    import banks.providers.minilm as minilm_module

    def broken(*args, **kwargs):
        raise FileNotFoundError("weights are not installed")

    monkeypatch.setattr(minilm_module, "bundled_model_dir", broken)
    embeddings_module._cached.cache_clear()
    settings.MEMORYHUB_EMBEDDINGS = "minilm"
    try:
        embedder = embeddings_module.get_embedder()
        assert isinstance(embedder, embeddings_module.UnavailableEmbedder)
        assert (embedder.name, embedder.dimensions) == ("all-MiniLM-L6-v2", 384)
        assert embeddings_module.embedder_spec(embedder) == "minilm"  # what a bank would be pinned to
        status = embedder_status()
        assert status["fallback"] and not status["semantic"] and not status["available"]
        assert "not installed" in status["fallback_reason"]
        health = api.client.get("/health").json()
        assert health["embeddings"]["fallback"] is True and "could not load" in health["message"]
    finally:
        embeddings_module._FALLBACKS.clear()
        embeddings_module._cached.cache_clear()


def test_existing_banks_keep_the_model_their_memories_carry(bank, make_bank):
    memory_retain(bank=bank, text="Alice plays the cello.", actor="test")
    empty = make_bank("no-memories")
    migration = importlib.import_module("banks.migrations.0007_pin_bank_embedding_models")
    from django.apps import apps

    migration.pin(apps, None)
    bank.refresh_from_db()
    empty.refresh_from_db()
    assert bank.embedding_provider == "hashing:384" and empty.embedding_provider == ""


def test_vectors_of_another_model_are_never_compared(bank):
    memory_retain(bank=bank, text="Alice plays the cello.", actor="test")
    Memory.objects.filter(bank=bank).update(embedding_model="some-other-model")
    hits, *_ = recall_memories(bank, "cello", arms=("semantic",))
    assert hits == []


def test_keyword_arm_weighs_rare_words_above_common_ones(bank):
    for i in range(12):
        memory_retain(bank=bank, text=f"Meeting notes number {i} about the weekly meeting schedule.", actor="test")
    memory_retain(bank=bank, text="The meeting moved to the Zanzibar office.", actor="test")
    memory_retain(bank=bank, text="Zanzibar spice farm visit.", actor="test")
    hits, _, trace, _ = recall_memories(bank, "meeting in Zanzibar", arms=("keyword",), max_results=3)
    assert hits[0].text == "The meeting moved to the Zanzibar office."
    assert hits[1].text == "Zanzibar spice farm visit."
    assert idf(1, 100) > idf(50, 100) > 0


def test_keyword_arm_scores_bm25_with_term_counts_and_document_lengths(bank):
    memory_retain(bank=bank, text="Kestrel kestrel kestrel over the dunes.", actor="test")
    memory_retain(bank=bank, text="Kestrel spotted above quiet dunes.", actor="test")
    memory_retain(bank=bank, text="Nothing about birds of prey here.", actor="test")
    where = "m.bank_id = %s AND m.archived_at IS NULL AND m.forgotten_at IS NULL"
    scored = keyword_arm(bank, "kestrel", where, [bank.pk], 5)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, length(search_vector) FROM banks_memory WHERE bank_id = %s", [bank.pk])
        lengths = dict(cursor.fetchall())
    avg_len = sum(lengths.values()) / len(lengths)
    counts = {m.pk: m.text.lower().count("kestrel") for m in Memory.objects.filter(bank=bank)}
    expected = sorted(((pk, idf(2, 3) * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * lengths[pk] / avg_len)))
                       for pk, tf in counts.items() if tf), key=lambda row: -row[1])
    assert [pk for pk, _ in scored] == [pk for pk, _ in expected]
    assert [score for _, score in scored] == pytest.approx([score for _, score in expected], rel=1e-9)


def test_the_bm25_statement_scores_in_float8_without_numeric_arithmetic(bank):
    """A module float beside an integer (``0.75 * length``) is numeric arithmetic in PostgreSQL, which the
    planner repeated for every query lexeme of every candidate: 17.9 against 12.1 ms for a twelve-lexeme question
    (docs/benchmarks.md, "BM25 in float8")."""
    memory_retain(bank=bank, text="Kestrel kestrel over the quiet dunes at dawn.", actor="test")
    where = "m.bank_id = %s AND m.archived_at IS NULL AND m.forgotten_at IS NULL"
    with CaptureQueriesContext(connection) as sent:
        assert keyword_arm(bank, "kestrel dunes dawn", where, [bank.pk], 5)
    [sql] = [q["sql"] for q in sent.captured_queries if q["sql"].startswith("SELECT s.id")]  # values bound
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN VERBOSE " + sql.replace("%", "%%"))
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "length(" in plan and "numeric" not in plan, plan


def test_trace_tells_each_hits_rank_in_every_arm(api, bank):
    api.post("/v1/retain", {"content": "Customer prefers dark-mode UI and weekly email digests.", "bank_id": bank.bank_id})
    api.post("/v1/retain", {"content": "The invoice was paid late in March.", "bank_id": bank.bank_id})
    body = api.post("/v1/recall", {"query": "dark-mode UI", "bank_id": bank.bank_id}).json()
    ranks = body["trace"]["hit_ranks"]
    assert ranks[0]["memory_id"] == body["hits"][0]["memory_id"]
    assert ranks[0]["arm_ranks"]["keyword"] == 1 and ranks[0]["arm_ranks"]["semantic"] == 1
    assert ranks[0]["fused_rank"] == 1 and ranks[0]["fused_score"] > 0


def test_a_question_that_names_a_time_uses_the_temporal_arm(bank):
    from datetime import UTC, datetime

    june = memory_retain(bank=bank, text="We went sailing with the team.", actor="test",
                         occurred_at=datetime(2022, 6, 12, tzinfo=UTC)).memory
    memory_retain(bank=bank, text="We went sailing with the family.", actor="test",
                  occurred_at=datetime(2023, 2, 2, tzinfo=UTC))
    hits, _, trace, _ = recall_memories(bank, "Who did we go sailing with last June?",
                                        filters=RecallFilters(reference_date=datetime(2023, 5, 28, tzinfo=UTC)))
    assert trace.time_window["phrase"] == "last june"
    assert hits[0].memory_id == june.memory_id and "temporal" in hits[0].arm_ranks


def test_playground_compares_two_configurations(bank, operator, operator_client):
    BankMembership.objects.create(user=operator, bank=bank, role="viewer")
    memory_retain(bank=bank, text="Customer prefers dark-mode UI.", actor="test")
    memory_retain(bank=bank, text="Dark chocolate is the customer's favourite.", actor="test")
    url = f"/banks/{bank.bank_id}/recall/"
    page = operator_client.get(url)
    assert page.status_code == 200 and b"Recall playground" in page.content
    page = operator_client.get(url, {"q": "dark-mode UI", "a_arms": ["semantic", "keyword"], "compare": "1",
                                     "b_arms": ["keyword"], "b_rrf_k": "10"})
    html = page.content.decode()
    assert page.status_code == 200
    assert "A: semantic + keyword" in html and "B: keyword" in html and "RRF k 10" in html
    assert "Customer prefers dark-mode UI." in html and "keyword" in html and " ms" in html
    other = Bank.objects.create(bank_id="not-granted")
    assert operator_client.get(f"/banks/{other.bank_id}/recall/").status_code == 404
    assert Client().get(url).status_code == 302  # to the login page


def test_recall_reads_no_vectors_back_and_counts_words_in_one_statement(bank, monkeypatch):
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from banks.selectors.recall_memo import clear_recall_memos

    for text in ("Alice plays the cello.", "Bob plays the drums on Fridays.", "Carol sings in a choir."):
        memory_retain(bank=bank, text=text, actor="test")
    counts = []
    # Statements sent whole (not prepared by name, memoryhub.postgres.prepared): their text is what is read.
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    for query in ("cello", "who plays the cello drums choir on fridays with alice bob and carol"):
        cache.clear()
        clear_recall_memos()  # the bank's size and average length are kept: count them both times
        with CaptureQueriesContext(connection) as captured:
            hits, *_ = recall_memories(bank, query, arms=("semantic", "keyword"))
        assert hits
        loads = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("SELECT id, memory_id, text")]
        assert loads and all("embedding" not in sql and "search_vector" not in sql for sql in loads)
        counts.append(len(captured.captured_queries))
    assert counts[0] == counts[1]  # ten more words, not ten more statements


def test_a_question_is_embedded_once_per_recall(bank, monkeypatch):
    from banks.providers import bank_embedder
    from banks.selectors.recall import query_vector, recall_bank

    memory_retain(bank=bank, text="Alice plays the cello.", actor="test")
    embedder = bank_embedder(bank)
    calls: list[list[str]] = []
    original = embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda texts: calls.append(list(texts)) or original(texts))
    query_vector.cache_clear()
    # Semantic arm, temporal arm (the question names a time) and the observation layer share one vector.
    outcome = recall_bank(bank, "Who played the cello last June?", include_observations=True)
    assert outcome.hits and "embed" in outcome.trace.strategy_timings_ms
    assert calls == [["Who played the cello last June?"]]


def test_keyword_candidates_holding_more_question_words_are_scored_first(bank, monkeypatch):
    from banks.selectors import recall_keyword

    monkeypatch.setattr(recall_keyword, "MAX_CANDIDATES", 20)
    monkeypatch.setattr(recall_keyword, "ONE_WORD_SHARE", 5)
    for i in range(40):
        memory_retain(bank=bank, text=f"Pelican sighting number {i} logged.", actor="test", near_dedup=False)
    both = {memory_retain(bank=bank, text=f"Pelican and heron together, sighting {i}.", actor="test",
                          near_dedup=False).memory_id for i in range(4)}
    where = "m.bank_id = %s AND m.archived_at IS NULL AND m.forgotten_at IS NULL"
    scored = keyword_arm(bank, "pelican heron", where, [bank.pk], 4)
    ids = dict(Memory.objects.filter(bank=bank).values_list("pk", "memory_id"))
    # Written last, behind 40 rows holding one of the words: a first-come sample of 20 would miss them.
    assert {ids[pk] for pk, _ in scored} == both


def test_a_filtered_semantic_search_never_comes_back_short_when_more_rows_match(bank, monkeypatch):
    from banks import vectors

    for i in range(120):
        memory_retain(bank=bank, text=f"Routine note {i} about the office plants.", actor="test", near_dedup=False,
                      tags=["rare"] if i % 40 == 0 else ["common"])
    real = vectors.enable_iterative_scan

    def give_up_early(cursor, limit):  # noqa: ANN001
        real(cursor, limit)
        # The graph walk gives up after a few rows, as it does on a huge bank with a rare tag (and is
        # chosen although the bank is small enough to sort whole).
        cursor.execute("SET LOCAL hnsw.max_scan_tuples = 5")
        cursor.execute("SET LOCAL hnsw.ef_search = 1")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("SET LOCAL enable_sort = off")

    monkeypatch.setattr(vectors, "enable_iterative_scan", give_up_early)
    hits, *_ = recall_memories(bank, "office plants", arms=("semantic",), max_results=10,
                               filters=RecallFilters(tags=["rare"]))
    assert sorted(h.text for h in hits) == [f"Routine note {i} about the office plants." for i in (0, 40, 80)]


def test_a_banks_first_memory_pins_its_model_so_a_new_server_default_leaves_it_searchable(make_bank, settings):
    bank = make_bank("pins-on-first-write")
    assert bank.embedding_provider == ""
    memory_retain(bank=bank, text="Alice plays the cello on Sundays.", actor="test")
    bank.refresh_from_db()
    assert bank.embedding_provider == "hashing:384"
    embeddings_module._cached.cache_clear()
    settings.MEMORYHUB_EMBEDDINGS = "hashing:256"  # the operator changes the default later
    try:
        hits, *_ = recall_memories(Bank.objects.get(pk=bank.pk), "cello on Sundays", arms=("semantic",))
        assert [h.text for h in hits] == ["Alice plays the cello on Sundays."]
        fresh = make_bank("after-the-change")
        memory_retain(bank=fresh, text="Bruno repairs bicycles.", actor="test")
        fresh.refresh_from_db()
        assert fresh.embedding_provider == "hashing:256"
    finally:
        embeddings_module._cached.cache_clear()


@pytest.mark.parametrize(("spec", "dims"), [("hashing:384", 384), ("hashing:64", 64)])
def test_an_embedders_spec_builds_it_again(spec, dims):
    from banks.providers.embeddings import embedder_spec

    embedder = build_embedder(spec)
    assert embedder_spec(embedder) == spec and build_embedder(embedder_spec(embedder)).dimensions == dims


def test_the_packaged_models_spec_is_minilm(minilm):
    from banks.providers.embeddings import embedder_spec

    assert embedder_spec(minilm) == "minilm"
