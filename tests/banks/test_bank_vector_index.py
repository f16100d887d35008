"""A big import moves a bank onto its own HNSW index: built after the load, used by recall, exact meanwhile."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from django.db import connection

from banks.models import Bank, Job, Memory
from banks.selectors.recall import recall_memories
from banks.services.memories import memory_retain
from banks.services.vector_indexes import bank_vector_index_build, bank_vector_index_drop
from banks.vectors import INDEX_OWN, INDEX_SHARED, bank_index_name, vector_index_state
from portability.formats.registry import open_archive
from portability.services import archive_import

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basil cedar dune ember").split()


def write_archive(path: Path, n: int, *, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(10)) + f" note {i}" for i in range(n)]
    with path.open("w") as fp:
        fp.write(json.dumps({"_ama_version": 1, "bank_id": "x", "memory_count": n}) + "\n")
        for i, text in enumerate(texts):
            fp.write(json.dumps({"id": f"m{i}", "text": text, "fact_type": "world"}) + "\n")
    return texts


def import_file(bank: Bank, path: Path):  # noqa: ANN201
    _, header, records = open_archive(path)
    return archive_import(bank=bank, records=records, actor="test", extract_entities=False,
                          expected=header.memory_count)


def captured_plan(run, marker: str) -> str:  # noqa: ANN001  (a callable)
    """The plan of the first nearest-neighbour statement ``run`` sends whose SQL contains ``marker``."""
    statements = []

    def capture(execute, sql, params, many, context):  # noqa: ANN001, ANN202
        if "<=>" in sql and marker in sql:
            statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        run()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_memory")
        cursor.execute("EXPLAIN " + statements[0][0], statements[0][1])
        return "\n".join(row[0] for row in cursor.fetchall())


def semantic_plan(bank: Bank, query: str) -> str:
    return captured_plan(lambda: recall_memories(bank, query, max_results=5, arms=("semantic",)),
                         "FROM banks_memory m")


def top_hit(bank: Bank, query: str) -> str:
    hits, _, trace, _ = recall_memories(bank, query, max_results=3, arms=("semantic",))
    return hits[0].text if hits else ""


@pytest.fixture
def small_threshold(settings):  # noqa: ANN001, ANN201
    settings.MEMORYHUB_OWN_VECTOR_INDEX_MIN = 200
    settings.MEMORYHUB_EXACT_SEARCH_ROWS = 0  # banks this small are otherwise read exactly, without a walk
    return settings


@pytest.mark.django_db(transaction=True)
def test_big_import_builds_the_banks_own_index_and_recall_uses_it(make_bank, small_threshold, tmp_path):
    big, small = make_bank("big"), make_bank("small")
    texts = write_archive(tmp_path / "big.jsonl", 400)
    write_archive(tmp_path / "small.jsonl", 150, seed=5)
    report = import_file(big, tmp_path / "big.jsonl")
    assert report.imported == 400
    import_file(small, tmp_path / "small.jsonl")

    big.refresh_from_db()
    small.refresh_from_db()
    assert big.own_vector_index and not small.own_vector_index
    assert not Memory.objects.filter(bank=big, own_vector_index=False).exists()
    assert not Memory.objects.filter(bank=small, own_vector_index=True).exists()
    assert vector_index_state(big.pk) == INDEX_OWN and vector_index_state(small.pk) == INDEX_SHARED

    with connection.cursor() as cursor:
        # A tiny table: make the planner show which index it may use rather than sort a few rows.
        cursor.execute("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")
        assert bank_index_name(big.pk) in semantic_plan(big, texts[7])
        assert "memory_hnsw_384" in semantic_plan(small, "alpha bravo")
        cursor.execute("RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_sort")
    assert top_hit(big, texts[7]) == texts[7]

    # A retain into the bank lands in its own index (the row trigger flags it) and is found there.
    retained = memory_retain(bank=big, text="zulu yankee xray whiskey a brand new memory", actor="test")
    row = Memory.objects.get(bank=big, memory_id=retained.memory.memory_id)
    assert row.own_vector_index
    assert top_hit(big, "zulu yankee xray whiskey a brand new memory") == row.text


@pytest.mark.django_db(transaction=True)
def test_recall_is_exact_while_the_banks_index_is_missing(make_bank, small_threshold, tmp_path):
    bank = make_bank("big")
    texts = write_archive(tmp_path / "big.jsonl", 300)
    import_file(bank, tmp_path / "big.jsonl")
    bank.refresh_from_db()
    bank_vector_index_drop(bank)
    assert vector_index_state(bank.pk) == "building"
    hits, _, trace, _ = recall_memories(bank, texts[42], max_results=3, arms=("semantic", "keyword"))
    assert trace.vector_index == "building"
    assert hits[0].text == texts[42]
    assert bank_vector_index_build(bank) is True
    assert bank_vector_index_build(bank) is False  # already there: nothing to do
    assert vector_index_state(bank.pk) == "own"


@pytest.mark.django_db(transaction=True)
def test_a_rerun_after_a_kill_builds_the_index_and_stores_nothing_twice(make_bank, small_threshold, tmp_path):
    bank = make_bank("big")
    texts = write_archive(tmp_path / "big.jsonl", 300)
    _, header, records = open_archive(tmp_path / "big.jsonl")

    def killed():  # noqa: ANN202
        for i, record in enumerate(records()):
            if i == 250:
                raise OSError("the archive's disk went away")
            yield record

    with pytest.raises(OSError):
        archive_import(bank=bank, records=killed, actor="test", extract_entities=False, batch_size=100,
                       expected=header.memory_count)
    assert vector_index_state(bank.pk) == "building"
    assert Memory.objects.filter(bank=bank).count() == 200
    report = import_file(bank, tmp_path / "big.jsonl")
    assert (report.imported, report.skipped) == (100, 200)
    assert Memory.objects.filter(bank=bank).count() == 300
    assert vector_index_state(bank.pk) == "own"
    assert top_hit(bank, texts[260]) == texts[260]


@pytest.mark.django_db(transaction=True)
def test_the_periodic_repair_builds_a_missing_index_but_never_under_a_running_load(make_bank, small_threshold,
                                                                                   tmp_path):
    from banks.services.locks import BANK_LOAD_LOCK, bank_lock_key
    from banks.services.vector_indexes import bank_loading, bank_vector_indexes_missing
    from portability.services.job_health import jobs_sweep

    bank = make_bank("big")
    write_archive(tmp_path / "big.jsonl", 300)
    import_file(bank, tmp_path / "big.jsonl")
    bank.refresh_from_db()
    bank_vector_index_drop(bank)
    with bank_loading(bank):
        # The load's lock is held by this session; the repair runs on another connection in real life,
        # so ask from a second connection whether it would build.
        from django.db import connections

        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [BANK_LOAD_LOCK, bank_lock_key(bank.pk)])
                assert cursor.fetchone()[0] is False
        finally:
            other.close()
    assert vector_index_state(bank.pk) == "building"
    # The sweep builds nothing itself: it queues a job (run here at once, eagerly) whose phases fill and build.
    assert jobs_sweep()["vector_index_jobs"] == 1
    assert vector_index_state(bank.pk) == "own"
    job = Job.objects.get(kind="vector_index", bank=bank)
    assert (job.state, job.phase, job.result["indexes_built"]) == ("succeeded", "building index", 1)
    assert bank_vector_indexes_missing() == []
    assert jobs_sweep()["vector_index_jobs"] == 0


@pytest.mark.django_db(transaction=True)
def test_deleting_the_bank_drops_its_index(make_bank, small_threshold, tmp_path):
    from banks.services.banks import bank_delete

    bank = make_bank("big")
    write_archive(tmp_path / "big.jsonl", 250)
    import_file(bank, tmp_path / "big.jsonl")
    name = bank_index_name(bank.pk)
    bank_delete(bank=bank, actor="test", confirm="big")
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s)", [name])
        assert cursor.fetchone()[0] is None


@pytest.mark.django_db(transaction=True)
def test_with_slow_embedding_a_big_import_stores_first_and_fills_vectors_after(make_bank, small_threshold,
                                                                                tmp_path):
    small_threshold.MEMORYHUB_IMPORT_DEFER_VECTORS = "always"
    bank = make_bank("big")
    texts = write_archive(tmp_path / "big.jsonl", 300)
    _, header, records = open_archive(tmp_path / "big.jsonl")
    during: list[tuple] = []

    def progress(report):  # noqa: ANN001, ANN202
        if not during:  # right after the first batch committed
            hits, _, trace, _ = recall_memories(bank, texts[5], max_results=3, arms=("semantic", "keyword"))
            during.append(([h.text for h in hits], trace.vector_index, trace.embeddings_pending,
                           trace.strategy_candidate_counts["semantic"]))

    report = archive_import(bank=bank, records=records, actor="test", extract_entities=False, batch_size=100,
                            expected=header.memory_count, progress=progress)
    assert report.imported == 300
    found, state, pending, semantic = during[0]
    assert texts[5] in found  # by keyword, at once
    assert (state, pending, semantic) == ("building", 100, 0)

    assert not Memory.objects.filter(bank=bank, embedding_dims__isnull=True).exists()
    assert vector_index_state(bank.pk) == "own"
    assert top_hit(bank, texts[11]) == texts[11]
    _, _, trace, _ = recall_memories(bank, texts[11], max_results=3, arms=("semantic",))
    assert (trace.vector_index, trace.embeddings_pending) == ("own", None)


@pytest.mark.django_db(transaction=True)
def test_vectors_a_killed_fill_left_out_are_filled_by_the_sweep(make_bank, small_threshold, tmp_path):
    from portability.services.job_health import jobs_sweep

    bank = make_bank("big")
    texts = write_archive(tmp_path / "big.jsonl", 300)
    import_file(bank, tmp_path / "big.jsonl")
    bank.refresh_from_db()
    bank_vector_index_drop(bank)
    Memory.objects.filter(bank=bank, memory_id__in=[f"m{i}" for i in range(0, 300, 3)]).update(
        embedding=None, embedding_model="", embedding_dims=None)
    _, _, trace, _ = recall_memories(bank, texts[3], max_results=3, arms=("semantic",))
    assert (trace.vector_index, trace.embeddings_pending) == ("building", 100)
    assert jobs_sweep()["vector_index_jobs"] == 1
    assert Job.objects.get(kind="vector_index", bank=bank).result["vectors_filled"] == 100
    assert not Memory.objects.filter(bank=bank, embedding_dims__isnull=True).exists()
    assert top_hit(bank, texts[3]) == texts[3]


@pytest.mark.django_db(transaction=True)
def test_the_near_duplicate_scan_searches_the_index_that_holds_the_banks_rows(make_bank, small_threshold, tmp_path):
    """The scan's neighbour query must imply the predicate of the index holding its bank's rows, or every
    batch would be an exact scan of the bank (the shared index leaves out banks on their own)."""
    from banks.services.duplicate_scan import duplicates_scan

    big, small = make_bank("big"), make_bank("small")
    write_archive(tmp_path / "big.jsonl", 400)
    write_archive(tmp_path / "small.jsonl", 150, seed=5)
    import_file(big, tmp_path / "big.jsonl")
    import_file(small, tmp_path / "small.jsonl")

    def scan_plan(bank: Bank) -> str:
        return captured_plan(lambda: duplicates_scan(bank=bank, threshold=0.9, full=True), "CROSS JOIN LATERAL")

    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")
        assert bank_index_name(big.pk) in scan_plan(big)
        assert "memory_hnsw_384" in scan_plan(small)
        cursor.execute("RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_sort")


@pytest.mark.django_db(transaction=True)
def test_a_big_import_refreshes_the_planners_statistics(make_bank, small_threshold, tmp_path):
    def banks_the_planner_knows() -> str:
        # Column statistics come from ANALYZE only (an index build refreshes the row count, not these).
        with connection.cursor() as cursor:
            cursor.execute("SELECT coalesce(most_common_vals::text, '') FROM pg_stats "
                           "WHERE tablename = 'banks_memory' AND attname = 'bank_id'")
            row = cursor.fetchone()
            return row[0] if row else ""

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_memory")  # the picture before: the bank does not exist yet
    big = make_bank("big")
    write_archive(tmp_path / "big.jsonl", 400)
    import_file(big, tmp_path / "big.jsonl")
    assert str(big.pk) in banks_the_planner_knows().strip("{}").split(",")


@pytest.mark.django_db(transaction=True)
def test_recall_walks_a_banks_own_index_wider_than_the_shared_one(make_bank, small_threshold, tmp_path, settings,
                                                                  monkeypatch):
    import banks.vectors

    settings.MEMORYHUB_OWN_INDEX_EF_SEARCH = 221
    # A graph of 300 rows is walked at most 300 / OWN_GRAPH_SHARE wide: here as wide as it is.
    monkeypatch.setattr(banks.vectors, "OWN_GRAPH_SHARE", 1)
    big, small = make_bank("big"), make_bank("small")
    texts = write_archive(tmp_path / "big.jsonl", 300)
    import_file(big, tmp_path / "big.jsonl")
    big.refresh_from_db()
    memory_retain(bank=small, text="a single note in a small bank", actor="test")

    def walked(bank: Bank, query: str) -> str:
        recall_memories(bank, query, max_results=5, arms=("semantic",))
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('hnsw.ef_search')")
            return cursor.fetchone()[0]

    assert big.own_vector_index and walked(big, texts[7]) == "221"
    assert walked(small, "single note") == "50"  # as broad as the 50 candidates recall asks for
    assert walked(big, texts[8]) == "221"  # switched back for the big bank


@pytest.mark.django_db(transaction=True)
def test_a_retain_does_not_wait_for_its_banks_index_build(make_bank):
    """The build holds its bank's index lock for minutes at a million memories; a retain into the same
    bank takes the bank's retain lock, which must be another key."""
    import psycopg

    from banks.services.locks import LOCK_CLASSES, VECTOR_INDEX_LOCK, bank_lock_key

    assert len(set(LOCK_CLASSES)) == len(LOCK_CLASSES)
    bank = make_bank("building")
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as builder:  # another session, as the build's would be
        builder.execute("SELECT pg_advisory_lock(%s, %s)", [VECTOR_INDEX_LOCK, bank_lock_key(bank.pk)])
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")
        try:
            outcome = memory_retain(bank=bank, text="stored while the bank's index builds", actor="test")
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
    assert outcome.stored
