"""A retain's near-duplicate look finds the memory it would repeat on every tier of the bank's vectors:
a small bank read exactly, a bank walked on the shared graph, a bank on its own index. The look walks
the graph narrowly (banks.selectors.near_duplicates.NEAR_LOOK_BREADTH); a walk that missed a true
near-duplicate would store it here. Both looks are checked: the first, and the decisive one under the
bank's lock (the first made blind, as when the duplicate committed between the two)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from django.db import connection

import banks.services.memories
from banks.models import Bank, Memory
from banks.providers import bank_embedder
from banks.providers.embeddings import cosine
from banks.services.memories import RetainOutcome, memory_retain
from banks.vectors import bank_index_name
from tests.factories import make_import

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basil cedar dune ember").split()
THRESHOLD = 0.85
COPIES = 25


def texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(10)) + f" note {i}" for i in range(n)]


def near_copy(text: str) -> str:
    """The same words and number, two of them swapped: another content hash, a cosine near 0.9."""
    words = text.split()
    j = next(j for j in range(2, 9) if words[j] != words[j + 1])
    words[j], words[j + 1] = words[j + 1], words[j]
    return " ".join(words)


def fill(bank: Bank, n: int, seed: int) -> list[str]:
    written = texts(n, seed)
    report = make_import(bank, [(f"m{i}", text, []) for i, text in enumerate(written)], expected=n)
    assert report.imported == n
    Bank.objects.filter(pk=bank.pk).update(dedup_threshold=THRESHOLD)
    bank.refresh_from_db()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_memory")
    return written


def look_plan(bank: Bank, text: str) -> str:
    """The plan of the retain's first near-duplicate look for ``text``."""
    statements = []

    def capture(execute, sql, params, many, context):  # noqa: ANN001, ANN202
        if "<=>" in sql and sql.startswith("SELECT memory_id, 1 - "):
            statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        memory_retain(bank=bank, text=text, actor="test")
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + statements[0][0], statements[0][1])
        return "\n".join(row[0] for row in cursor.fetchall())


def refused_copies(bank: Bank, written: list[str]) -> list[tuple[str, str, RetainOutcome]]:
    """Near-copies of ``COPIES`` of the bank's memories, retained; each with the memory id it repeats."""
    embedder = bank_embedder(bank)
    picked = random.Random(7).sample(range(len(written)), COPIES)
    answers = []
    for i in picked:
        copy = near_copy(written[i])
        a, b = embedder.embed([written[i], copy])
        assert cosine(a, b) >= THRESHOLD  # a true near-duplicate: an exact read refuses it
        answers.append((f"m{i}", copy, memory_retain(bank=bank, text=copy, actor="test")))
    return answers


def assert_all_refused(bank: Bank, answers: list[tuple[str, str, RetainOutcome]]) -> None:
    missed = [memory_id for memory_id, _, outcome in answers if outcome.stored]
    assert not missed, f"near-duplicates stored: {missed}"
    for memory_id, _, outcome in answers:
        assert outcome.deduplicated and outcome.duplicate_of == memory_id
        assert outcome.error == "All chunks are near-duplicates" and THRESHOLD <= (outcome.similarity or 0) <= 1
    assert not Memory.objects.filter(bank=bank, text__in=[copy for _, copy, _ in answers]).exists()


@pytest.fixture
def walked() -> Iterator[None]:
    """Plans that walk whatever graph holds the bank's rows (the planner reads a test's small banks exactly)."""
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")
    yield
    with connection.cursor() as cursor:
        cursor.execute("RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_sort")


@pytest.fixture(params=["first", "decisive"])
def look(request, monkeypatch) -> str:  # noqa: ANN001
    """Which look must find the duplicate: the first, or (the first made blind) the one under the lock."""
    if request.param == "decisive":
        monkeypatch.setattr(banks.services.memories, "_near_duplicate", lambda *args: None)
    return str(request.param)


@pytest.mark.django_db(transaction=True)
def test_a_small_bank_is_read_exactly_and_every_near_copy_refused(make_bank, look):
    bank = make_bank("small")
    # The pages earlier tests' rolled-back inserts left in the table (one process runs many tests)
    # priced reading it exactly above a graph walk: 135 pages of dead rows for 40 live ones.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM banks_memory")
    written = fill(bank, 40, seed=3)
    assert "memory_hnsw" not in look_plan(bank, "a question about nothing in particular")
    assert_all_refused(bank, refused_copies(bank, written))


@pytest.mark.django_db(transaction=True)
def test_a_bank_on_the_shared_graph_walks_it_and_refuses_every_near_copy(make_bank, settings, walked, look):
    settings.MEMORYHUB_OWN_VECTOR_INDEX_MIN = 100_000
    bank, other = make_bank("graph-walked"), make_bank("neighbour")
    fill(other, 300, seed=5)  # the graph holds another bank's rows too: the walk filters by bank
    written = fill(bank, 300, seed=3)
    assert not bank.own_vector_index
    assert "memory_hnsw_384" in look_plan(bank, "a question about nothing in particular")
    assert_all_refused(bank, refused_copies(bank, written))


@pytest.mark.django_db(transaction=True)
def test_a_bank_on_its_own_index_walks_it_and_refuses_every_near_copy(make_bank, settings, walked, look):
    settings.MEMORYHUB_OWN_VECTOR_INDEX_MIN = 200
    bank = make_bank("own")
    written = fill(bank, 300, seed=3)
    assert bank.own_vector_index
    assert bank_index_name(bank.pk) in look_plan(bank, "a question about nothing in particular")
    assert_all_refused(bank, refused_copies(bank, written))
