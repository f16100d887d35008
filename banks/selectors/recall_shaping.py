"""Astrocyte's per-call recall options: ``layer_weights``, ``detail_level`` and ``external_context``.

* ``layer_weights`` ({layer: weight}) multiplies each candidate's fused score by the weight of its
  layer before the answer is cut to ``max_results`` (Astrocyte's layer-weighted RRF). A memory's
  layer is its ``memory_layer`` ("episodic", "semantic", ...), or ``fact`` when it has none;
  observations are the ``observation`` layer and, once weighted, are ranked among the memories on
  the same reciprocal-rank scale instead of in front of them. Directives are rules, not ranked
  answers: they stay first whatever the weights. A layer not named keeps weight 1.
* ``detail_level`` says how much of each hit comes back: ``full`` (default) everything; ``bodies``
  the text without metadata; ``summary`` the first two sentences (at most 280 characters); ``titles`` the
  first sentence or line (about 80 characters). It is applied before ``max_tokens``, so a terser
  level fits more hits in the same budget. The memory id is always there to fetch the whole.
* ``external_context`` (hits the caller found elsewhere: another RAG index, a graph) is fused
  with the bank's memories as one more ranked list at the semantic arm's weight, the same text
  kept once (its better-ranked copy), and counted in ``total_available``; its hits carry the
  strategy ``external`` and never a bank they do not come from.

The trace records the options used and each external hit's rank.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings

from banks.models import Memory
from banks.recall_fusion import Fused
from banks.selectors.recall_types import RecallHit, RecallTrace
from memoryhub.errors import InvalidInput
from memoryhub.input_rules import parse_time, utc_datetime

DETAIL_LEVELS = ("titles", "summary", "bodies", "full")
MAX_LAYER_WEIGHTS = 64
MAX_EXTERNAL_HITS = 200
TITLE_CHARS = 80
SUMMARY_CHARS = 280
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


@dataclass(frozen=True)
class RecallOptions:
    layer_weights: dict[str, float] | None = None
    detail_level: str | None = None
    external_context: list[RecallHit] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.layer_weights and self.detail_level in (None, "full") and not self.external_context


# ---- parsing (pure) -------------------------------------------------------------------------


def parse_layer_weights(raw: Any) -> dict[str, float] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise InvalidInput("must be an object of layer name to weight", field="layer_weights")
    if len(raw) > MAX_LAYER_WEIGHTS:
        raise InvalidInput(f"at most {MAX_LAYER_WEIGHTS} layers", field="layer_weights")
    weights: dict[str, float] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not name.strip() or len(name) > 64:
            raise InvalidInput("a layer name is 1-64 characters", field="layer_weights")
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise InvalidInput(f"weight of {name!r} must be a finite number >= 0", field=f"layer_weights.{name}")
        weights[name.strip()] = float(value)
    return weights or None


def parse_detail_level(raw: Any) -> str | None:
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str) or raw.strip().lower() not in DETAIL_LEVELS:
        raise InvalidInput(f"must be one of {', '.join(DETAIL_LEVELS)}", field="detail_level")
    return raw.strip().lower()


def _external_id(item: dict[str, Any], text: str) -> str:
    given = item.get("memory_id")
    if isinstance(given, str) and given.strip():
        return given.strip()[:255]
    return "ext-" + hashlib.sha256(text.encode()).hexdigest()[:24]


def _external_time(item: dict[str, Any], key: str, where: str) -> Any:
    raw = item.get(key)
    if raw in (None, ""):
        return None
    parsed = parse_time(raw)
    if parsed is None:
        raise InvalidInput("not a date or date-time (ISO 8601)", field=f"{where}.{key}")
    return utc_datetime(parsed, f"{where}.{key}")


def parse_external_context(raw: Any) -> list[RecallHit]:
    """Caller-supplied hits: Astrocyte's MemoryHit objects (``text`` required), or plain strings."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidInput("must be a list of hits ({text, score, ...})", field="external_context")
    if len(raw) > MAX_EXTERNAL_HITS:
        raise InvalidInput(f"at most {MAX_EXTERNAL_HITS} hits", field="external_context")
    hits: list[RecallHit] = []
    for index, item in enumerate(raw):
        where = f"external_context.{index}"
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict):
            raise InvalidInput("must be an object with text", field=where)
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("Field required", field=f"{where}.text")
        if len(text) > settings.MEMORYHUB_MAX_CONTENT_CHARS:
            raise InvalidInput(f"at most {settings.MEMORYHUB_MAX_CONTENT_CHARS} characters", field=f"{where}.text")
        score = item.get("score", 0.0)
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            raise InvalidInput("must be a finite number", field=f"{where}.score")
        metadata, tags = item.get("metadata") or {}, item.get("tags") or []
        if not isinstance(metadata, dict):
            raise InvalidInput("must be an object", field=f"{where}.metadata")
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise InvalidInput("must be a list of strings", field=f"{where}.tags")
        labels = {}
        for key in ("bank_id", "fact_type", "source", "memory_layer"):
            value = item.get(key)
            if value is not None and not isinstance(value, str):
                raise InvalidInput("must be a string", field=f"{where}.{key}")
            labels[key] = value[:255] if isinstance(value, str) else None
        hits.append(RecallHit(
            memory_id=_external_id(item, text), text=text, score=float(score), bank_id=labels["bank_id"],
            fact_type=labels["fact_type"], metadata=metadata, tags=list(tags),
            occurred_at=_external_time(item, "occurred_at", where),
            retained_at=_external_time(item, "retained_at", where), source=labels["source"],
            memory_layer=labels["memory_layer"], layer=labels["memory_layer"] or "external", strategies=["external"],
        ))
    return hits


def parse_recall_options(*, layer_weights: Any = None, detail_level: Any = None,
                         external_context: Any = None) -> RecallOptions:
    return RecallOptions(layer_weights=parse_layer_weights(layer_weights),
                         detail_level=parse_detail_level(detail_level),
                         external_context=parse_external_context(external_context))


# ---- rules (pure) ---------------------------------------------------------------------------


def layer_of(memory_layer: str | None) -> str:
    return memory_layer or "fact"


def weigh(fused: list[Fused], layers: dict[int, str | None], weights: dict[str, float]) -> list[Fused]:
    """Each candidate's fused score times its layer's weight, re-sorted (ties keep their order)."""
    for item in fused:
        item.score *= weights.get(layer_of(layers.get(item.pk)), 1.0)
    return sorted(fused, key=lambda f: -f.score)


def _shorten(text: str, limit: int, sentences: int) -> str:
    first = text.strip().split("\n", 1)[0].strip() if sentences == 1 else " ".join(text.split())
    cut = " ".join(_SENTENCE_END.split(first)[:sentences]).strip() or first
    if len(cut) <= limit:
        return cut
    head = cut[: limit - 1]
    if " " in head[limit // 2:]:
        head = head[: head.rfind(" ")]
    return head.rstrip(" ,;:") + "…"


def shape_detail(hits: list[RecallHit], level: str | None) -> list[RecallHit]:
    if level in (None, "full"):
        return hits
    if level == "bodies":
        return [replace(h, metadata={}) for h in hits]
    limit, sentences = (TITLE_CHARS, 1) if level == "titles" else (SUMMARY_CHARS, 2)
    return [replace(h, text=_shorten(h.text, limit, sentences), metadata={}) for h in hits]


def fuse_with(hits: list[RecallHit], extra: list[RecallHit], *, arm: str, weight: float, k: int) -> list[RecallHit]:
    """Ranked ``extra`` hits merged into ``hits`` (already in their final order, reranked or not): a hit at
    position i counts 1 / (k + i), an extra at rank r weight / (k + r), the extra's score; hits keep their
    own scores and order among themselves. The same text is kept once, its better-placed copy."""
    keyed: list[tuple[float, int, RecallHit]] = [(1.0 / (k + i), 0, h) for i, h in enumerate(hits, start=1)]
    for rank, hit in enumerate(extra, start=1):
        score = round(weight / (k + rank), 6)
        keyed.append((weight / (k + rank), 1, replace(hit, score=score, arm_ranks={arm: rank}, fused_score=score,
                                                       fused_rank=None)))
    keyed.sort(key=lambda t: (-t[0], t[1]))
    seen: set[str] = set()
    out = []
    for _, _, hit in keyed:
        if hit.text in seen:
            continue
        seen.add(hit.text)
        out.append(hit)
    return out


# ---- applying them to a recall ----------------------------------------------------------------


def weigh_fused(bank_pk: int, fused: list[Fused], weights: dict[str, float] | None) -> list[Fused]:
    """Layer weights on the fused candidates of one bank, before they are cut to ``max_results``."""
    if not weights or not fused:
        return fused
    layers = dict(Memory.objects.filter(bank_id=bank_pk, pk__in=[f.pk for f in fused]).values_list("pk", "memory_layer"))
    return weigh(fused, layers, weights)


def apply(hits: list[RecallHit], total: int, trace: RecallTrace, options: RecallOptions | None, *,
          max_results: int, rrf_k: int, semantic_weight: float, external: bool = True) -> tuple[list[RecallHit], int]:
    """The options on a bank's answer (directives in front, then observations, then memories)."""
    if options is None or options.empty:
        return hits, total
    record(trace, options)
    directives = [h for h in hits if h.layer == "directive"]
    observations = [h for h in hits if h.layer == "observation"]
    rest = [h for h in hits if h.layer not in ("directive", "observation")]
    if options.layer_weights and observations:
        # Observations become one more ranked list, weighted by their layer, among the memories.
        weight = options.layer_weights.get("observation", 1.0)
        rest, observations = fuse_with(rest, observations, arm="observation", weight=weight, k=rrf_k), []
    if external:
        rest, total = merge_external(rest, total, trace, options, rrf_k=rrf_k, weight=semantic_weight)
    hits = shape_detail(directives + observations + rest[:max_results], options.detail_level)
    rerank_trace(trace, hits)
    return hits, total


def merge_external(hits: list[RecallHit], total: int, trace: RecallTrace, options: RecallOptions, *,
                   rrf_k: int, weight: float) -> tuple[list[RecallHit], int]:
    """The caller's external hits (best score first) fused in as one more list; not cut."""
    if not options.external_context:
        return hits, total
    ranked = sorted(options.external_context, key=lambda h: -h.score)
    trace.strategies_used.append("external")
    trace.strategy_candidate_counts["external"] = len(ranked)
    return fuse_with(hits, ranked, arm="external", weight=weight, k=rrf_k), total + len(ranked)


def rerank_trace(trace: RecallTrace, hits: list[RecallHit]) -> None:
    """hit_ranks again for the final list: a memory keeps its fused rank, a joined hit gets its position."""
    ranked = [h for h in hits if h.layer != "directive" and h.fused_score is not None]
    trace.hit_ranks = [
        {"memory_id": h.memory_id, "arm_ranks": h.arm_ranks, "fused_rank": h.fused_rank or position,
         "fused_score": h.fused_score,
         **({"rerank_rank": h.rerank_rank, "rerank_score": h.rerank_score} if h.rerank_rank is not None else {})}
        for position, h in enumerate(ranked, start=1)]


def record(trace: RecallTrace, options: RecallOptions) -> None:
    trace.layer_weights = dict(options.layer_weights) if options.layer_weights else None
    trace.detail_level = options.detail_level
    trace.external_context_count = len(options.external_context) if options.external_context else None


__all__ = ["DETAIL_LEVELS", "RecallOptions", "apply", "merge_external", "parse_recall_options", "shape_detail", "weigh", "weigh_fused"]
