"""A big tag of a big bank gets an HNSW index of its own: chosen by size, built in the background,
walked by recall filtered on that tag, dropped when the tag shrinks, before a big load and with the bank."""

from __future__ import annotations

import pytest
from django.db import connection

from banks.models import BankTagIndex, BankTextStatistics
from banks.selectors import recall
from banks.selectors.recall import RecallFilters
from banks.selectors.recall_memo import clear_recall_memos
from banks.services.bank_removal import bank_hide, bank_remove_rows
from banks.services.forget import memory_forget
from banks.services.memories import memory_retain
from banks.services.tag_indexes import bank_tag_indexes_refresh, bank_tag_indexes_refresh_all
from banks.services.text_statistics import bank_lexemes_count
from banks.services.vector_indexes import bank_loading, bank_vector_index_prepare
from banks.vector_tags import MAX_SHARE, choose_tags, tag_array_literal, tag_index_name, tag_scope
from tests.banks.test_bank_vector_index import captured_plan

pytestmark = pytest.mark.django_db(transaction=True)

# 100 memories: "shore" on 10 (10 %), "it's 5%" on 5 (a quote, and psycopg's placeholder sign), "all" on every one.
TAGS = {"shore": range(0, 100, 10), "it's 5%": range(3, 100, 20)}


@pytest.mark.parametrize(("counts", "bank_rows", "per_bank", "chosen"), [
    ([("a", 50), ("b", 200), ("c", 10)], 1000, 8, [("b", 200), ("a", 50)]),  # c: under the minimum
    ([("a", 50), ("b", 500)], 1000, 8, [("a", 50)]),  # b: half the bank, walked in the bank's graph
    ([("b", 60), ("a", 60), ("c", 90)], 1000, 2, [("c", 90), ("a", 60)]),  # largest first, ties by name
    ([("a", 50)], 1000, 0, []),  # turned off
    ([("a", 200)], 1000, 8, [("a", 200)]),  # exactly the largest share
    # Together no more entries than the bank's rows: the smaller tag that still fits is taken.
    ([(t, 200) for t in "abcde"] + [("f", 150), ("g", 20)], 1000, 8, [(t, 200) for t in "abcde"]),
    ([(t, 190) for t in "abcde"] + [("f", 150), ("g", 50)], 1000, 8, [(t, 190) for t in "abcde"] + [("g", 50)]),
])
def test_which_tags_get_a_graph(counts, bank_rows, per_bank, chosen):
    assert MAX_SHARE == 0.2
    assert choose_tags(counts, bank_rows, min_rows=20, per_bank=per_bank) == chosen


def test_a_tag_is_written_as_a_literal_the_planner_can_match():
    assert tag_array_literal("it's") == "ARRAY['it''s']::varchar[]"
    assert tag_scope(7, 384, "x", "m") == "m.bank_id = 7 AND m.embedding_dims = 384 AND m.tags && ARRAY['x']::varchar[]"
    assert tag_array_literal("a\\b") == "ARRAY[ E'a\\\\b']::varchar[]"  # the driver's escape string
    # In a query with parameters psycopg reads % as a placeholder: the clause doubles it.
    assert tag_scope(7, 384, "5%") == "bank_id = 7 AND embedding_dims = 384 AND tags && ARRAY['5%%']::varchar[]"
    with pytest.raises(ValueError, match="NUL"):
        tag_array_literal("a\x00b")


def test_postgresql_reads_every_tag_back_from_its_literal():
    tags = ["it's", "a\\b", "'; DROP TABLE banks_memory; --", "\\'", "naïve", "{x,y}", 'say "hi"']
    with connection.cursor() as cursor:
        for tag in tags:
            cursor.execute(f"SELECT {tag_array_literal(tag)}")  # noqa: S608  (the literal under test)
            assert cursor.fetchone()[0] == [tag]


@pytest.fixture
def tagged(bank, settings):
    settings.MEMORYHUB_TAG_INDEX_MIN = 5
    settings.MEMORYHUB_LEXEME_STATISTICS_MIN = 50
    settings.MEMORYHUB_EXACT_SEARCH_ROWS = 0  # a bank this small is otherwise read exactly
    for i in range(100):
        memory_retain(bank=bank, text=f"Field note {i}: the {'heron' if i % 2 else 'gull'} at the pier, tide {i}.",
                      actor="test", near_dedup=False, tags=["all", *[t for t, where in TAGS.items() if i in where]])
    bank_lexemes_count(bank)
    clear_recall_memos()
    yield bank
    clear_recall_memos()
    # The indexes outlive the rows the test database's flush removes: a later test's bank may reuse this id.
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relname LIKE 'memory_hnsw_tag_%%' AND relkind = 'i'")
        for (name,) in cursor.fetchall():
            cursor.execute(f"DROP INDEX IF EXISTS {name}")


def index_names(bank) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexrelid::regclass::text FROM pg_index WHERE indexrelid::regclass::text "
                       "LIKE 'memory_hnsw_tag_%%' AND indisvalid")
        found = {r[0] for r in cursor.fetchall()}
    return found & {tag_index_name(pk) for pk in BankTagIndex.objects.filter(bank=bank).values_list("pk", flat=True)}


def test_the_refresh_indexes_the_big_rare_tags_and_recall_walks_them(tagged):
    assert bank_tag_indexes_refresh(tagged) == 2  # "all" is the whole bank: walked in the bank's graph
    indexes = {i.tag: i for i in BankTagIndex.objects.filter(bank=tagged)}
    assert {t: i.rows for t, i in indexes.items()} == {"shore": 10, "it's 5%": 5}
    assert all(i.built_at for i in indexes.values())
    assert len(index_names(tagged)) == 2
    assert BankTextStatistics.objects.get(bank=tagged).tags_live_rows == 100
    for tag in TAGS:
        with connection.cursor() as cursor:
            # A tiny table: make the planner show which index it may use rather than sort a few rows.
            cursor.execute("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")
            plan = captured_plan(lambda t=tag: recall.ARMS["semantic"](tagged, "heron at the pier",
                                                                       RecallFilters(tags=[t]), 5), "FROM banks_memory m")
            cursor.execute("RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_sort")
        assert tag_index_name(indexes[tag].pk) in plan
        hits = recall.ARMS["semantic"](tagged, "heron at the pier", RecallFilters(tags=[tag]), 5)
        assert len(hits) == 5 and all(tag in m.tags for m in tagged.memories.filter(pk__in=[h[0] for h in hits]))
    # Two tags, or one without a graph: not walked there.
    plan = captured_plan(lambda: recall.ARMS["semantic"](tagged, "heron", RecallFilters(tags=["shore", "it's 5%"]), 5),
                         "FROM banks_memory m")
    assert "memory_hnsw_tag_" not in plan


def test_a_tag_that_shrinks_loses_its_graph_and_nothing_changes_without_drift(tagged):
    bank_tag_indexes_refresh(tagged)
    assert bank_tag_indexes_refresh_all() == []  # counted, built, the bank has not moved
    shrinking = tag_index_name(BankTagIndex.objects.get(bank=tagged, tag="it's 5%").pk)
    gone = list(tagged.memories.filter(tags__contains=["it's 5%"]).values_list("memory_id", flat=True)[:3])
    memory_forget(bank=tagged, memory_ids=gone, actor="test")
    assert bank_tag_indexes_refresh(tagged) == 0
    assert set(BankTagIndex.objects.filter(bank=tagged).values_list("tag", flat=True)) == {"shore"}
    assert len(index_names(tagged)) == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_class WHERE relname = %s", [shrinking])
        assert cursor.fetchone()[0] == 0


def test_a_build_a_kill_left_undone_is_finished_but_never_under_a_running_load(tagged):
    bank_tag_indexes_refresh(tagged)
    index = BankTagIndex.objects.get(bank=tagged, tag="shore")
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {tag_index_name(index.pk)}")
    BankTagIndex.objects.filter(pk=index.pk).update(built_at=None)
    with bank_loading(tagged):
        from django.db import connections

        other = connections.create_connection("default")  # the periodic job runs in another session
        try:
            from banks.services import tag_indexes

            with other.cursor() as cursor:
                assert tag_indexes._try_session_lock(cursor, tag_indexes.BANK_LOAD_LOCK, tagged.pk) is False
        finally:
            other.close()
    assert bank_tag_indexes_refresh_all() == [tagged.pk]
    assert BankTagIndex.objects.get(pk=index.pk).built_at is not None and len(index_names(tagged)) == 2


def test_a_big_load_drops_the_tag_graphs_and_the_next_pass_builds_them_again(tagged, settings):
    bank_tag_indexes_refresh(tagged)
    settings.MEMORYHUB_OWN_VECTOR_INDEX_MIN = 50
    assert bank_vector_index_prepare(tagged, incoming=500) is True
    assert not BankTagIndex.objects.filter(bank=tagged).exists() and not index_names(tagged)
    assert BankTextStatistics.objects.get(bank=tagged).tags_live_rows is None
    assert bank_tag_indexes_refresh_all() == [tagged.pk]
    assert len(index_names(tagged)) == 2


def test_removing_the_bank_drops_its_tag_graphs(tagged):
    bank_tag_indexes_refresh(tagged)
    names = {tag_index_name(pk) for pk in BankTagIndex.objects.filter(bank=tagged).values_list("pk", flat=True)}
    bank_hide(tagged)
    counts = bank_remove_rows(bank=tagged, actor="test")
    assert counts["tag_indexes"] == 2
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_class WHERE relname = ANY(%s)", [list(names)])
        assert cursor.fetchone()[0] == 0


def test_a_retain_with_an_indexed_tag_is_found_on_its_graph_at_once(tagged):
    bank_tag_indexes_refresh(tagged)
    memory_retain(bank=tagged, text="A kingfisher dove off the pier at dawn.", actor="test", tags=["shore"])
    hits = recall.ARMS["semantic"](tagged, "kingfisher dove off the pier at dawn", RecallFilters(tags=["shore"]), 5)
    assert tagged.memories.get(pk=hits[0][0]).text == "A kingfisher dove off the pier at dawn."


def test_a_walk_of_a_tags_graph_that_comes_back_short_is_answered_exactly_within_the_tag(tagged, settings,
                                                                                       monkeypatch):
    bank_tag_indexes_refresh(tagged)
    settings.MEMORYHUB_TAG_INDEX_MIN = 1  # the planner's estimate of five rows must not keep the graph out
    scopes = []
    real = recall.nearest_rows

    def spy(*args, **kwargs):
        scopes.append(kwargs["scope"])
        return real(*args, **kwargs)

    monkeypatch.setattr(recall, "nearest_rows", spy)
    # Five memories carry the tag and ten are asked for: the walk yields five, the exact pass must keep the tag.
    rows = recall.ARMS["semantic"](tagged, "heron at the pier", RecallFilters(tags=["it's 5%"]), 10)
    assert "ARRAY['it''s 5%%']" in scopes[0]
    assert len(rows) == 5
    assert all("it's 5%" in tags for tags in tagged.memories.filter(pk__in=[r[0] for r in rows]).values_list("tags", flat=True))
