"""Recall and graph reads name their bank in every statement on a bank's rows (tests/bank_routing.py's
rule, run here on every statement of these requests whatever MEMORYHUB_BANK_ROUTING says)."""

from __future__ import annotations

import pytest
from django.db import connection

from banks.services.memories import memory_retain
from tests.bank_routing import RoutingCheck, bank_tables, wrapper


@pytest.mark.django_db
def test_recall_and_graph_statements_pin_the_bank(api, bank):
    memory_retain(bank=bank, text="Harbourmaster Ortega says the ferry leaves at seven.", actor="test")
    memory_retain(bank=bank, text="Ortega keeps the ferry's keys at the harbour office.", actor="test")
    check = RoutingCheck(strict=True, tables=bank_tables(), active=True)
    with connection.execute_wrapper(wrapper(check)):
        recall = api.post("/v1/recall", {"query": "When does the ferry leave?", "bank_id": "user-alice",
                                          "include": {"observations": True},
                                          "layer_weights": {"fact": 1.0, "experience": 0.5}})
        graph = api.post("/v1/graph/neighbors", {"entity_ids": ["Ortega"], "bank_id": "user-alice"})
    assert recall.status_code == 200, recall.content
    assert graph.status_code == 200, graph.content
    assert recall.json()["hits"]
    assert check.failures == []
