"""Pure recall rules: weighted RRF with per-arm ranks, per-bank settings, time windows in questions."""

from __future__ import annotations

from datetime import UTC, datetime

from banks.providers.embeddings import HashingEmbedder
from banks.recall_eval import PlainBM25, metrics
from banks.recall_fusion import RecallConfig, rrf_fuse, vector_weights
from banks.recall_time import parse_time_window

REF = datetime(2023, 5, 28, 19, 47, tzinfo=UTC)  # a Sunday


def test_rrf_keeps_each_arms_rank_and_weights_arms():
    fused = rrf_fuse({"semantic": [1, 2, 3], "keyword": [3, 4]}, k=60, weights={"semantic": 1.0, "keyword": 0.5})
    by_pk = {f.pk: f for f in fused}
    assert by_pk[3].arm_ranks == {"semantic": 3, "keyword": 1}
    assert by_pk[3].score == 1 / 63 + 0.5 / 61
    assert fused[0].pk == 3 and fused[1].pk == 1
    # A zero weight keeps the arm's ranks for the trace but gives it no say.
    silent = rrf_fuse({"semantic": [1], "graph": [2]}, weights={"semantic": 1.0, "graph": 0.0})
    assert [f.pk for f in silent] == [1, 2] and silent[1].score == 0 and silent[1].arm_ranks == {"graph": 1}


def test_bank_settings_fall_back_to_defaults_on_bad_values():
    config = RecallConfig.from_settings({"arms": ["keyword", "nonsense"], "weights": {"keyword": -1, "graph": 2},
                                         "rrf_k": "x", "depth": 5000})
    default = RecallConfig()
    assert config.arms == ("keyword",)
    assert config.weights["keyword"] == default.weights["keyword"] and config.weights["graph"] == 2.0
    assert config.rrf_k == default.rrf_k and config.depth == default.depth
    assert RecallConfig.from_settings(None) == default


def test_time_windows_are_relative_to_the_reference_date():
    june = parse_time_window("What did I cook last June?", REF)
    assert june.start <= datetime(2022, 6, 1, tzinfo=UTC) and june.end >= datetime(2022, 6, 30, tzinfo=UTC)
    assert june.end < datetime(2022, 7, 10, tzinfo=UTC)
    ago = parse_time_window("where did I go two weeks ago?", REF)
    assert ago.start < datetime(2023, 5, 14, tzinfo=UTC) < ago.end
    saturday = parse_time_window("what happened last Saturday", REF)
    assert saturday.start <= datetime(2023, 5, 27, tzinfo=UTC) < saturday.end
    assert parse_time_window("May I ask what my dog's name is?", REF) is None
    assert parse_time_window("what is my favourite colour", REF) is None
    before = parse_time_window("what did I buy before March", REF)
    assert before.end == datetime(2023, 3, 1, tzinfo=UTC)


def test_metrics_and_the_textbook_bm25():
    found = metrics(["a", "x", "b"], {"a", "b"})
    assert (found["r@5"], found["r@10"], found["mrr"]) == (1.0, 1.0, 1.0)
    assert abs(found["ndcg"] - (1 + 1 / 2) / (1 + 1 / 1.5849625007211563)) < 1e-12
    assert metrics(["x", "a"], {"a", "b"})["mrr"] == 0.5
    bm25 = PlainBM25({"1": "the cat sat", "2": "the dog sat on the mat", "3": "a zebra"})
    assert set(bm25.rank("zebra cat")) == {"1", "3"}
    assert bm25.rank("the") == ["2", "1"]


def test_a_weak_embedders_vector_arms_count_for_less_unless_the_bank_set_them():
    hashing = HashingEmbedder().fusion_weight
    assert 0 < hashing < 1
    weights = vector_weights(RecallConfig.from_settings({}), hashing)
    assert weights["semantic"] == 1.0 * hashing
    # The other arms as they were: the temporal arm's evidence is the window, whatever the vectors.
    assert weights["keyword"] == 1.5 and weights["temporal"] == 0.5 and weights["hop"] == 0.3
    chosen = vector_weights(RecallConfig.from_settings({"weights": {"semantic": 0.8}}), hashing)
    assert chosen["semantic"] == 0.8
    assert vector_weights(RecallConfig.from_settings({}), 1.0) == RecallConfig().weights
