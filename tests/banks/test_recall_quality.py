"""Recall quality regression on the committed LongMemEval sample: the fused hybrid is never worse
than any of its arms alone (recall@5 and recall@10), with the semantic model the install ships."""

from __future__ import annotations

from pathlib import Path

import pytest

from banks.recall_eval import build_corpus, load_instances, metrics, summarise
from banks.recall_fusion import RecallConfig
from banks.selectors.recall import RecallFilters, recall_memories
from bench.quality_banks import build_bank

SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "recall_sample.json"


pytestmark = pytest.mark.django_db


@pytest.fixture
def quality_bank():  # noqa: ANN201
    # Turns cut to 300 characters keep the embedding of the bank to seconds.
    corpus = build_corpus(load_instances(SAMPLE), max_chars=300)
    return build_bank("quality-sample", "minilm", corpus), corpus


def score(bank, corpus, settings: dict) -> dict[str, float]:  # noqa: ANN001
    config = RecallConfig.from_settings(settings)
    rows = []
    for question in corpus.questions:
        hits, *_ = recall_memories(bank, question.text, max_results=10, config=config,
                                   filters=RecallFilters(reference_date=question.asked_at))
        rows.append((question.category, metrics([h.memory_id for h in hits], question.evidence)))
    return summarise(rows)["all"]


def test_hybrid_is_at_least_as_good_as_each_arm_alone(quality_bank):
    bank, corpus = quality_bank
    # One test (the bank takes a while to embed): the sample first, then the comparison.
    assert {q.category for q in corpus.questions} >= {"multi-session", "temporal-reasoning", "single-session-user"}
    assert bank.memories.count() == len(corpus.turns) > 300
    assert sum(len(q.evidence) for q in corpus.questions) >= len(corpus.questions)
    assert bank.memories.first().embedding_model == "all-MiniLM-L6-v2"
    hybrid = score(bank, corpus, {})
    for arm in ("semantic", "keyword", "graph"):
        alone = score(bank, corpus, {"arms": [arm], "time_aware": False})
        assert hybrid["r@10"] >= alone["r@10"], (arm, hybrid, alone)
        assert hybrid["r@5"] >= alone["r@5"], (arm, hybrid, alone)
