"""The recall playground: run a question against a bank and see why each memory ranked where it did.

Per hit: the rank each arm gave it, the fused score, its layer; per run: each stage's
latency. Two configurations side by side show what a setting changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from banks.providers import bank_embedder
from banks.providers.embeddings import embedder_status
from banks.recall_fusion import ARM_NAMES, RecallConfig
from banks.selectors.recall import RecallFilters, RecallOutcome, bank_recall_config, recall_bank
from banks.text_search import bank_language
from curation.access import operator_bank
from memoryhub.input_rules import parse_time


@dataclass
class Run:
    label: str
    config: RecallConfig
    outcome: RecallOutcome | None = None
    # When two configurations are compared: each memory's rank in the other run (its label in ``versus``).
    other_ranks: dict[str, int] | None = None
    versus: str = ""

    def change(self, memory_id: str, rank: int) -> tuple[str, str] | None:
        """(css class, words) for how this hit moved against the other run; None when not compared or
        unchanged."""
        if self.other_ranks is None:
            return None
        before = self.other_ranks.get(memory_id)
        if before is None:
            return "rank-new", f"not in {self.versus}'s list"
        if before == rank:
            return None
        return ("rank-up", f"up {before - rank} from {self.versus}'s #{before}") if before > rank else (
            "rank-down", f"down {rank - before} from {self.versus}'s #{before}")

    @property
    def arm_fields(self) -> list[tuple[str, bool, float]]:
        """(arm, on, weight) for the form."""
        on = set(self.config.arms) | ({"temporal"} if self.config.time_aware else set())
        return [(arm, arm in on, self.config.weights.get(arm, 0.0)) for arm in ARM_NAMES]

    @property
    def rows(self) -> list[tuple[Any, list[int | None], tuple[str, str] | None]]:
        """Each hit with the rank every arm gave it (None: that arm did not find it) and how it moved
        against the other run (see ``change``)."""
        hits = self.outcome.hits if self.outcome else []
        return [(hit, [hit.arm_ranks.get(arm) for arm in ARM_NAMES], self.change(hit.memory_id, rank))
                for rank, hit in enumerate(hits, 1)]

    @property
    def cells(self) -> list[dict[str, Any]]:
        """Each hit for the side-by-side comparison: the arms that ranked it (only those), its move."""
        return [{"hit": hit, "ranks": [(arm, r) for arm, r in zip(ARM_NAMES, ranks, strict=True) if r is not None],
                 "change": change} for hit, ranks, change in self.rows]

    @property
    def reranked(self) -> bool:
        """Did the rerank stage re-order this run (so the table shows fused and rerank ranks)?"""
        rerank = self.outcome.trace.rerank if self.outcome else None
        return bool(rerank and rerank.get("status") == "ok")

    @property
    def stages(self) -> list[tuple[str, float, int | None]]:
        """(stage, milliseconds, candidates or None for a stage that finds none) per stage that ran."""
        trace = self.outcome.trace if self.outcome else None
        if trace is None:
            return []
        return [(name, ms, trace.strategy_candidate_counts.get(name, 0) if name in ARM_NAMES else None)
                for name, ms in trace.strategy_timings_ms.items()]


def _config_from(request: HttpRequest, prefix: str, base: RecallConfig) -> RecallConfig:
    """A configuration from the form fields ``<prefix>arms``, ``<prefix>w_<arm>``, ``<prefix>rrf_k``, ``<prefix>depth``."""
    get = request.GET
    raw: dict[str, Any] = {"arms": get.getlist(f"{prefix}arms") or list(base.arms), "weights": dict(base.weights),
                           "rrf_k": base.rrf_k, "depth": base.depth, "time_aware": "temporal" in get.getlist(
                               f"{prefix}arms") if get.getlist(f"{prefix}arms") else base.time_aware}
    for arm in ARM_NAMES:
        try:
            raw["weights"][arm] = float(get.get(f"{prefix}w_{arm}", raw["weights"][arm]))
        except ValueError:
            pass
    for name in ("rrf_k", "depth"):
        try:
            raw[name] = int(get.get(f"{prefix}{name}", raw[name]))
        except ValueError:
            pass
    raw["arms"] = [a for a in raw["arms"] if a != "temporal"]
    submitted = "q" in get
    try:
        rerank_depth = int(get.get(f"{prefix}rerank_depth", base.rerank_depth))
    except ValueError:
        rerank_depth = base.rerank_depth
    raw["rerank"] = {"enabled": bool(get.get(f"{prefix}rerank")) if submitted else base.rerank,
                     "candidates": rerank_depth}
    raw["expand"] = bool(get.get(f"{prefix}expand")) if submitted else base.expand
    raw["multi_hop"] = bool(get.get(f"{prefix}multi_hop")) if submitted else base.multi_hop
    return RecallConfig.from_settings(raw)


def side_by_side(a: Run, b: Run) -> list[tuple[int, dict[str, Any] | None, dict[str, Any] | None]]:
    """(rank, A's hit, B's hit) per rank: one row per rank, so the two runs read across, not down two
    tall tables. The shorter run leaves its cell empty."""
    left, right = a.cells, b.cells
    return [(i + 1, left[i] if i < len(left) else None, right[i] if i < len(right) else None)
            for i in range(max(len(left), len(right)))]


@login_required
def recall_playground(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    base = bank_recall_config(bank)
    query = request.GET.get("q", "").strip()
    try:
        max_results = max(1, min(int(request.GET.get("n", 10)), 50))
    except ValueError:
        max_results = 10
    try:
        reference = parse_time(request.GET.get("ref", "").strip() or None)
    except ValueError:
        reference = None  # an unreadable reference date means "now"
    runs = [Run("A", _config_from(request, "a_", base))]
    compare = bool(request.GET.get("compare"))
    second = Run("B", _config_from(request, "b_", base) if compare else base)
    if compare:
        runs.append(second)
    if query:
        for run in runs:
            run.outcome = recall_bank(bank, query, max_results=max_results, config=run.config,
                                      filters=RecallFilters(reference_date=reference))
        if compare:
            # B's rows say how each memory moved against A (and A's against B): the point of comparing.
            for run, other in ((runs[1], runs[0]), (runs[0], runs[1])):
                hits = other.outcome.hits if other.outcome else []
                run.other_ranks = {hit.memory_id: rank for rank, hit in enumerate(hits, 1)}
                run.versus = other.label
    embedder = bank_embedder(bank)
    status = embedder_status(bank.embedding_provider or None)
    context = {"bank": bank, "tab": "recall", "q": query, "n": max_results, "ref": request.GET.get("ref", ""),
               "runs": runs, "forms": [(runs[0], "a_"), (second, "b_")], "arms": ARM_NAMES, "compare": compare,
               "embedder": embedder, "embedder_status": status, "base": base,
               "language": bank_language(bank.config),
               "pairs": side_by_side(runs[0], runs[1]) if compare and query else []}
    template = "curation/recall_playground.html"
    if getattr(request, "htmx", False) and query:
        template += "#results"
    return render(request, template, context)
