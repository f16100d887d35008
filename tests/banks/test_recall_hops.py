"""Multi-hop recall: one hop from the first arms' best hits through shared entities and the session,
and turns naming nobody inherit the entities of the turn before them for the graph arm."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from banks.models import Bank, BankMembership, Memory
from banks.recall_fusion import RecallConfig
from banks.selectors.recall import RecallFilters, recall_memories
from banks.services.memories import memory_retain
from banks.services.memory_edit import memory_update

pytestmark = pytest.mark.django_db(transaction=True)
DAY = datetime(2024, 3, 9, 11, 0, tzinfo=UTC)


def store(bank: Bank, text: str, index: int, session: str) -> str:
    outcome = memory_retain(bank=bank, text=text, actor="t", metadata={"session_id": session, "role": "user"},
                            occurred_at=DAY, created_at=DAY + timedelta(seconds=index), near_dedup=False)
    assert outcome.stored
    return outcome.memory_id or ""


@pytest.fixture
def dogs() -> tuple[Bank, dict[str, str]]:
    bank = Bank.objects.create(bank_id="dogs")
    ids = {
        "park": store(bank, "Yesterday our greyhound Biscuit sprinted with Pepper, a dalmatian, at the park.", 0, "a"),
        "fence": store(bank, "The park is fully fenced, thankfully.", 1, "a"),
        "owner": store(bank, "By the way the owner of Pepper, Ana, trains dogs for a living.", 0, "b"),
        "vet": store(bank, "We took Biscuit to the vet today for a check-up.", 0, "c"),
        "kilos": store(bank, "She said he needs to put on two kilos.", 1, "c"),
        "far": store(bank, "My cousin Lucia bought a bicycle in Madrid.", 0, "d"),
    }
    return bank, ids


def ask(bank: Bank, question: str, **settings: object):  # noqa: ANN201
    hits, _, trace, _ = recall_memories(bank, question, max_results=5, arms=("keyword",),
                                        config=RecallConfig.from_settings({"time_aware": False, **settings}))
    return hits, trace


def test_a_hop_through_a_shared_entity_brings_the_second_fact(dogs):
    bank, ids = dogs
    hits, trace = ask(bank, "sprinted dalmatian")
    found = {h.memory_id: h for h in hits}
    assert hits[0].memory_id == ids["park"]
    assert ids["owner"] in found and "hop" in found[ids["owner"]].arm_ranks
    assert found[ids["owner"]].hop_from == ids["park"]
    assert "hop" in trace.strategies_used and "hops" in trace.strategy_timings_ms
    assert ids["far"] not in found
    entry = next(r for r in trace.hit_ranks if r["memory_id"] == ids["owner"])
    assert entry["hop_from"] == ids["park"]
    without, trace = ask(bank, "sprinted dalmatian", multi_hop=False)
    assert ids["owner"] not in {h.memory_id for h in without} and "hops" not in trace.strategy_timings_ms


def test_a_hop_to_the_next_turn_of_the_session(dogs):
    bank, ids = dogs
    hits, _ = ask(bank, "two kilos")
    found = {h.memory_id: h for h in hits}
    assert hits[0].memory_id == ids["kilos"]
    # The turn before the reply, which the question's words are not in: by the session hop.
    assert ids["vet"] in found and found[ids["vet"]].arm_ranks == {"session": 1}
    assert found[ids["vet"]].hop_from == ids["kilos"]


def test_hops_keep_the_recall_filters(dogs):
    bank, ids = dogs
    memory_update(memory=Memory.objects.get(memory_id=ids["park"]), actor="t", tags=["walks"])
    hits, *_ = recall_memories(bank, "sprinted dalmatian", max_results=5, arms=("keyword",),
                               filters=RecallFilters(tags=["walks"]))
    assert [h.memory_id for h in hits] == [ids["park"]]  # its hops (owner, vet, fence) are not tagged


def test_a_turn_naming_nobody_inherits_the_entities_of_the_turn_before_for_the_graph_arm(dogs):
    bank, ids = dogs
    hits, _, _, _ = recall_memories(bank, "What did the vet say about Biscuit?", arms=("graph",),
                                    config=RecallConfig.from_settings({"time_aware": False, "multi_hop": False}))
    ranked = [h.memory_id for h in hits]
    assert ids["kilos"] in ranked  # "She said he needs..." names no one: it inherits Biscuit
    assert ranked.index(ids["vet"]) < ranked.index(ids["kilos"])
    assert ids["fence"] not in ranked or ranked.index(ids["park"]) < ranked.index(ids["fence"])
    assert ids["far"] not in ranked


def test_the_playground_shows_the_context_and_the_hop_and_can_turn_hops_off(dogs, operator, operator_client):
    bank, ids = dogs
    BankMembership.objects.create(user=operator, bank=bank, role="viewer")
    page = operator_client.get(f"/banks/{bank.bank_id}/recall/", {"q": "two kilos", "a_arms": ["keyword"],
                                                                  "a_multi_hop": "1"})
    html = page.content.decode()
    assert page.status_code == 200
    assert "context: user, 2024-03-09" in html and "We took Biscuit to the vet today" in html
    assert f"reached by one hop (session) from {ids['kilos']}" in html
    assert 'name="a_multi_hop" value="1" checked' in html
    page = operator_client.get(f"/banks/{bank.bank_id}/recall/", {"q": "two kilos", "a_arms": ["keyword"]})
    assert "reached by one hop" not in page.content.decode()


def _hop_statements(captured) -> list[str]:  # noqa: ANN001
    from banks.selectors.recall_hops import _HOPS_SQL
    from memoryhub.postgres.prepared import _prepared_form

    name = _prepared_form(_HOPS_SQL)[0]
    return [" ".join(q["sql"].replace(name, "hops").split("(")[0].split()[:3]) for q in captured.captured_queries
            if name in q["sql"] or "WITH seed AS MATERIALIZED" in q["sql"]]


def test_the_hop_statement_is_prepared_once_per_connection(dogs, settings, monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    bank, ids = dogs
    connection.close()  # a connection of its own, whatever earlier tests prepared
    with CaptureQueriesContext(connection) as captured:
        first, _ = ask(bank, "sprinted dalmatian")
        second, _ = ask(bank, "sprinted dalmatian")
    assert _hop_statements(captured) == ["PREPARE hops AS", "EXECUTE hops", "EXECUTE hops"]
    assert ids["owner"] in {h.memory_id for h in first} and first == second
    # A new connection (the old one closed, as after a restart of the database) prepares it again.
    connection.close()
    with CaptureQueriesContext(connection) as captured:
        again, _ = ask(bank, "sprinted dalmatian")
    assert _hop_statements(captured) == ["PREPARE hops AS", "EXECUTE hops"]
    # A connection that lasts one request would prepare it each time: the statement is sent whole.
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    with CaptureQueriesContext(connection) as captured:
        ask(bank, "sprinted dalmatian")
    assert _hop_statements(captured) == ["WITH seed AS"]
    monkeypatch.undo()
    # Behind a transaction-pooling proxy the session is not the client's: the statement is sent whole.
    settings.MEMORYHUB_DB_SESSION_SETTINGS = False
    with CaptureQueriesContext(connection) as captured:
        plain, _ = ask(bank, "sprinted dalmatian")
    assert _hop_statements(captured) == ["WITH seed AS"]
    assert [h.memory_id for h in plain] == [h.memory_id for h in first] == [h.memory_id for h in again]
