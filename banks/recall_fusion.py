"""How recall fuses its arms: weighted reciprocal-rank fusion and the per-bank settings for it.

Pure rules (no database): tested on their own and shared by the recall selector, the
playground and the quality benchmark.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ARM_NAMES = ("semantic", "keyword", "graph", "temporal")
# Lists the multi-hop stage adds after the first fusion (banks.selectors.recall_hops): weighted like arms.
HOP_NAMES = ("hop", "session")

# Tuned on bench/recall_quality.py (see docs/benchmarks.md): on conversational memories BM25 is the stronger
# single arm (questions reuse the words of their evidence), the semantic arm finds the paraphrases
# it misses, the graph arm only breaks ties between memories that share the question's entities.
# A smaller k than the customary 60 lets a top rank in one arm count for more.
DEFAULT_WEIGHTS = {"semantic": 1.0, "keyword": 1.5, "graph": 0.3, "temporal": 0.5, "hop": 0.3, "session": 0.3}
DEFAULT_RRF_K = 20
# Candidates each arm brings: enough that a memory ranked mid-list by both arms can win.
DEFAULT_DEPTH = 50
OVERFETCH = 5
# Fused candidates the optional rerank stage re-scores (at least max_results).
DEFAULT_RERANK_DEPTH = 20


@dataclass(frozen=True)
class RecallConfig:
    """Per-bank recall settings (``bank.config["recall"]``), each with a tuned default."""

    arms: tuple[str, ...] = ("semantic", "keyword", "graph")
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    rrf_k: int = DEFAULT_RRF_K
    depth: int = DEFAULT_DEPTH
    time_aware: bool = True
    # Optional stages, off unless the bank turns them on (a reranker / a language model must be configured).
    rerank: bool = False
    rerank_depth: int = DEFAULT_RERANK_DEPTH
    expand: bool = False
    # Whether recall puts the bank's directives in front of its hits when the caller does not say
    # (``include_directives``). On by default; a bank serving clients that read ``hits[0]`` as the best
    # memory (Astrocyte's) can turn it off.
    include_directives: bool = True
    # One hop from the first fusion's best hits through the entity graph and the session (on by default).
    multi_hop: bool = True
    # A caller paging through one question (the memory list's search) asks every page of the same number
    # of candidates per arm, so the candidates fused, and the total it shows, do not change per page.
    fixed_candidates: int = 0
    # The weights the bank set itself (the others are the defaults, which vector_weights may scale).
    weights_set: tuple[str, ...] = ()

    def candidates(self, max_results: int) -> int:
        if self.fixed_candidates:
            return self.fixed_candidates
        return max(self.depth, max(1, max_results) * OVERFETCH)

    @classmethod
    def from_settings(cls, raw: dict[str, Any] | None, **overrides: Any) -> RecallConfig:
        """Read ``bank.config["recall"]``; unknown keys and bad values fall back to the defaults."""
        raw = dict(raw or {})
        raw.update({k: v for k, v in overrides.items() if v is not None})
        arms = tuple(a for a in raw.get("arms", cls.arms) if a in ARM_NAMES) or cls.arms
        weights = dict(DEFAULT_WEIGHTS)
        weights_set: list[str] = []
        for name, value in (raw.get("weights") or {}).items():
            if name in ARM_NAMES + HOP_NAMES and isinstance(value, int | float) and value >= 0:
                weights[name] = float(value)
                weights_set.append(name)
        rrf_k = raw.get("rrf_k", DEFAULT_RRF_K)
        depth = raw.get("depth", DEFAULT_DEPTH)
        # "rerank": true, or {"enabled": true, "candidates": 30}
        rerank = raw.get("rerank", False)
        rerank_depth = rerank.get("candidates", DEFAULT_RERANK_DEPTH) if isinstance(rerank, dict) else \
            DEFAULT_RERANK_DEPTH
        return cls(
            arms=arms, weights=weights,
            rrf_k=int(rrf_k) if isinstance(rrf_k, int) and 1 <= rrf_k <= 1000 else DEFAULT_RRF_K,
            depth=int(depth) if isinstance(depth, int) and 1 <= depth <= 1000 else DEFAULT_DEPTH,
            time_aware=bool(raw.get("time_aware", True)),
            rerank=bool(rerank.get("enabled", True)) if isinstance(rerank, dict) else rerank is True,
            rerank_depth=int(rerank_depth) if isinstance(rerank_depth, int) and 1 <= rerank_depth <= 200
            else DEFAULT_RERANK_DEPTH,
            expand=raw.get("expand", False) is True,
            include_directives=raw.get("include_directives", True) is not False,
            multi_hop=raw.get("multi_hop", True) is not False,
            weights_set=tuple(weights_set),
        )

    def as_settings(self) -> dict[str, Any]:
        return {"arms": list(self.arms), "weights": dict(self.weights), "rrf_k": self.rrf_k, "depth": self.depth,
                "time_aware": self.time_aware,
                "rerank": {"enabled": self.rerank, "candidates": self.rerank_depth}, "expand": self.expand,
                "include_directives": self.include_directives, "multi_hop": self.multi_hop}


def vector_weights(config: RecallConfig, fusion_weight: float) -> dict[str, float]:
    """The fusion weights for a bank whose embedder declares ``fusion_weight`` (how far its vectors are
    to be trusted beside the keyword arm: 1 for a language model, less for the hashing embedder): the
    semantic arm's default weight scaled by it. Not the temporal arm's, though it orders by the same
    vectors: its evidence is the window the question names (memories outside it are not in its list),
    whatever the embedder. A weight the bank set itself is kept as set."""
    if fusion_weight == 1.0 or "semantic" in config.weights_set:
        return config.weights
    return {**config.weights, "semantic": config.weights["semantic"] * fusion_weight}


@dataclass(slots=True)
class Fused:
    """One fused candidate: its score and, per arm that found it, the 1-based rank there."""

    pk: int
    score: float
    arm_ranks: dict[str, int]


def rrf_fuse(ranked_lists: dict[str, list[int]], k: int = DEFAULT_RRF_K,
             weights: dict[str, float] | None = None) -> list[Fused]:
    """Weighted reciprocal-rank fusion: score(d) = sum over arms of weight / (k + rank), rank from 1."""
    scores: dict[int, float] = {}
    ranks: dict[int, dict[str, int]] = {}
    # Every recall fuses twice, about a hundred candidates each time: one dictionary lookup per candidate
    # and arm, and slotted results, take about a quarter off the plainer loop (120 candidates, best of 7 ×
    # 2,000 calls, three alternated pairs: 111 / 148 / 116 → 83 / 79 / 87 µs a call on an AVX2 EPYC).
    for name, ids in ranked_lists.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, item in enumerate(ids, start=1):
            found = ranks.get(item)
            if found is None:
                ranks[item] = {name: rank}
                scores[item] = weight / (k + rank) if weight else 0.0
            else:
                found[name] = rank
                if weight:
                    scores[item] += weight / (k + rank)
    fused = [Fused(i, scores[i], r) for i, r in ranks.items()]
    # Ties: the item found by more arms, then the newer row (higher pk) first.
    fused.sort(key=lambda f: (-f.score, -len(f.arm_ranks), -f.pk))
    return fused
