"""Astrocyte's recall options over REST and the agent tools: layer_weights, detail_level, external_context."""

from __future__ import annotations

import pytest

from agents.toolbox import run_tool
from banks.access import principal_for_token
from banks.api.auth import token_lookup
from banks.services.memories import memory_retain
from banks.services.observations import observation_create

pytestmark = pytest.mark.django_db

LONG = ("Alice moved the weekly finance review to Thursday mornings. She wants the slides a day ahead, "
        "in PDF, with the budget variance on the first page and the hiring plan at the end of the deck. "
        "Bob agreed to send them by Wednesday noon.")


def recall(api, **body):
    response = api.post("/v1/recall", {"bank_id": "user-alice", **body})
    assert response.status_code == 200, response.content
    return response.json()


def texts(answer):
    return [h["text"] for h in answer["hits"]]


@pytest.fixture
def layered(bank):
    episodic = memory_retain(bank=bank, text="Alice drank oat milk coffee at the Lisbon office on Monday.",
                             actor="test", memory_layer="episodic").memory_id
    semantic = memory_retain(bank=bank, text="Alice prefers oat milk in her coffee.", actor="test",
                             memory_layer="semantic").memory_id
    plain = memory_retain(bank=bank, text="Oat milk coffee is stocked in the Lisbon office kitchen.",
                          actor="test").memory_id
    return {"episodic": episodic, "semantic": semantic, "fact": plain}


class TestLayerWeights:
    def test_a_weight_moves_a_layer_in_the_fused_order_before_the_cut(self, api, layered):
        query = "oat milk coffee Lisbon office"
        base = recall(api, query=query, max_results=3)
        order = [h["memory_layer"] or "fact" for h in base["hits"]]
        assert sorted(order) == ["episodic", "fact", "semantic"]
        first = order[0]
        weighted = recall(api, query=query, max_results=3, layer_weights={first: 0.001})
        assert [h["memory_layer"] or "fact" for h in weighted["hits"]][-1] == first
        # Weights act on every candidate before max_results: the top-1 answer changes too.
        top = recall(api, query=query, max_results=1, layer_weights={first: 0.001})
        assert (top["hits"][0]["memory_layer"] or "fact") != first
        assert top["hits"][0]["memory_id"] == weighted["hits"][0]["memory_id"]
        assert weighted["trace"]["layer_weights"] == {first: 0.001}
        assert "layer_weights" not in base["trace"]  # only when given
        # The weighted score is the fused score times the weight.
        by_id = {h["memory_id"]: h["score"] for h in base["hits"]}
        low = weighted["hits"][-1]
        assert low["score"] == pytest.approx(by_id[low["memory_id"]] * 0.001, abs=2e-6)

    def test_the_seed_example_boosts_semantic_over_episodic(self, api, layered):
        answer = recall(api, query="oat milk coffee", max_results=3,
                        layer_weights={"semantic": 1000.0, "episodic": 0.8})
        assert answer["hits"][0]["memory_id"] == layered["semantic"]

    def test_observations_are_ranked_among_memories_once_weighted(self, api, bank, layered):
        observation_create(bank=bank, text="Alice is a regular oat milk coffee drinker.", actor="test")
        plain = recall(api, query="oat milk coffee", include_observations=True, include_directives=False)
        assert plain["hits"][0]["layer"] == "observation"
        demoted = recall(api, query="oat milk coffee", include_observations=True, include_directives=False,
                         layer_weights={"observation": 0.01})
        assert demoted["hits"][-1]["layer"] == "observation"
        assert [h["memory_id"] for h in demoted["hits"]] == [r["memory_id"] for r in demoted["trace"]["hit_ranks"]]

    @pytest.mark.parametrize("weights", [{"fact": -1}, {"fact": "x"}, ["fact"], {"fact": True}])
    def test_bad_weights_are_a_400_naming_the_field(self, api, layered, weights):
        response = api.post("/v1/recall", {"bank_id": "user-alice", "query": "x", "layer_weights": weights})
        assert response.status_code == 400
        assert "layer_weights" in response.json()["detail"]


class TestDetailLevel:
    @pytest.fixture
    def long_memory(self, bank):
        return memory_retain(bank=bank, text=LONG, actor="test", metadata={"team": "finance"}).memory_id

    def test_titles_summary_bodies_and_full(self, api, long_memory):
        full = recall(api, query="finance review slides", detail_level="full")["hits"][0]
        default = recall(api, query="finance review slides")["hits"][0]
        assert full == default and full["text"] == LONG and full["metadata"] == {"team": "finance"}
        bodies = recall(api, query="finance review slides", detail_level="bodies")
        assert bodies["hits"][0]["text"] == LONG and bodies["hits"][0]["metadata"] == {}
        titles = recall(api, query="finance review slides", detail_level="titles")
        title = titles["hits"][0]
        assert title["text"] == "Alice moved the weekly finance review to Thursday mornings."
        assert title["memory_id"] == long_memory and title["metadata"] == {}
        assert titles["trace"]["detail_level"] == "titles"
        summary = recall(api, query="finance review slides", detail_level="SUMMARY")["hits"][0]["text"]
        assert len(summary) <= 280 and summary.startswith("Alice moved") and summary != LONG

    def test_a_terser_level_fits_more_hits_in_the_token_budget(self, api, bank, long_memory):
        other = memory_retain(bank=bank, actor="test", text=(
            "The finance review slides for the board need the cash forecast and a short risk summary. Carol "
            "collects every department's figures on Tuesday, checks them against the ledger, and circulates "
            "a draft to the directors before the review starts."))
        assert other.stored
        full = recall(api, query="finance review slides", max_tokens=60)
        titles = recall(api, query="finance review slides", max_tokens=60, detail_level="titles")
        assert len(full["hits"]) == 1 and full["truncated"] is True
        assert len(titles["hits"]) == 2

    def test_an_unknown_level_is_a_400(self, api, long_memory):
        response = api.post("/v1/recall", {"bank_id": "user-alice", "query": "x", "detail_level": "verbose"})
        assert response.status_code == 400 and "detail_level" in response.json()["detail"]


class TestExternalContext:
    def test_external_hits_are_fused_with_the_bank_and_counted(self, api, layered):
        external = [
            {"text": "Alice's team orders oat milk from Lisbon Dairy.", "score": 0.9, "memory_id": "crm-17",
             "metadata": {"system": "crm"}, "tags": ["crm"]},
            {"text": "Alice prefers oat milk in her coffee.", "score": 0.1},  # same text as a memory: kept once
            "Lisbon office coffee machine was replaced in May.",
        ]
        base = recall(api, query="oat milk coffee", max_results=10)
        answer = recall(api, query="oat milk coffee", max_results=10, external_context=external)
        hits = {h["memory_id"]: h for h in answer["hits"]}
        assert hits["crm-17"]["bank_id"] is None and hits["crm-17"]["metadata"] == {"system": "crm"}
        assert hits["crm-17"]["layer"] == "external"
        generated = [m for m in hits if m.startswith("ext-")]
        assert len(generated) == 1 and hits[generated[0]]["text"] == "Lisbon office coffee machine was replaced in May."
        assert texts(answer).count("Alice prefers oat milk in her coffee.") == 1
        assert answer["total_available"] == base["total_available"] + 3
        assert "external" in answer["trace"]["strategies_used"]
        assert answer["trace"]["external_context_count"] == 3
        ranks = {r["memory_id"]: r["arm_ranks"] for r in answer["trace"]["hit_ranks"]}
        assert ranks["crm-17"] == {"external": 1}
        # Fused by rank, the best external hit sits among the bank's best, not after them all.
        assert texts(answer).index("Alice's team orders oat milk from Lisbon Dairy.") < len(answer["hits"]) - 1

    def test_max_results_still_caps_the_answer(self, api, layered):
        external = [{"text": f"External note {i} about oat milk.", "score": 1.0 - i / 10} for i in range(5)]
        answer = recall(api, query="oat milk coffee", max_results=4, external_context=external)
        assert len(answer["hits"]) == 4

    @pytest.mark.parametrize(("external", "field"), [
        ([{"score": 0.3}], "external_context.0.text"),
        ([{"text": "ok"}, {"text": "x", "score": "high"}], "external_context.1.score"),
        ({"text": "x"}, "external_context"),
        ([{"text": "x", "occurred_at": "yesterday-ish"}], "external_context.0.occurred_at"),
    ])
    def test_bad_external_hits_are_a_400_naming_the_item(self, api, layered, external, field):
        response = api.post("/v1/recall", {"bank_id": "user-alice", "query": "x", "external_context": external})
        assert response.status_code == 400
        assert field in response.json()["detail"]

    def test_multi_bank_recall_merges_external_once(self, api_for, make_bank):
        for bank_id in ("user-alice", "user-bob"):
            memory_retain(bank=make_bank(bank_id), text=f"{bank_id} drinks oat milk coffee.", actor="test")
        client = api_for({"user-*": ["read"]})
        response = client.post("/v1/recall", {"banks": ["user-alice", "user-bob"], "query": "oat milk coffee",
                                              "external_context": [{"text": "Oat milk is on the order list."}],
                                              "detail_level": "titles"})
        answer = response.json()
        assert response.status_code == 200, answer
        assert texts(answer).count("Oat milk is on the order list.") == 1
        assert {h["bank_id"] for h in answer["hits"]} == {"user-alice", "user-bob", None}
        assert answer["trace"]["detail_level"] == "titles"


def test_the_agent_recall_tool_takes_the_same_options(make_token, layered):
    principal = principal_for_token(token_lookup(make_token()))
    base = run_tool(principal, "memory_recall", {"bank_id": "user-alice", "query": "oat milk coffee Lisbon office"})
    first = base["hits"][0]["memory_layer"] or "fact"
    answer = run_tool(principal, "memory_recall", {
        "bank_id": "user-alice", "query": "oat milk coffee Lisbon office", "layer_weights": {first: 0.001},
        "detail_level": "titles", "external_context": [{"text": "From the wiki: oat milk runs out on Fridays."}]})
    assert (answer["hits"][-1]["memory_layer"] or answer["hits"][-1]["layer"]) in (first, "external")
    assert (answer["hits"][0]["memory_layer"] or "fact") != first
    assert "From the wiki: oat milk runs out on Fridays." in texts(answer)
    assert answer["trace"]["layer_weights"] == {first: 0.001} and answer["trace"]["detail_level"] == "titles"
    with pytest.raises(Exception, match="detail_level"):
        run_tool(principal, "memory_recall", {"bank_id": "user-alice", "query": "x", "detail_level": "loud"})
