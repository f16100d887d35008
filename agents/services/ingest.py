"""Auto-ingest: facts worth keeping from one conversation turn.

Extract candidate facts (with a category and an importance) through the language
model, keep those at or above the bank's importance threshold, at most
``max_facts_per_turn`` of them, drop near-duplicates of what the bank already holds
(and of each other), and retain the rest. Runs on the worker, so the caller waits
for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from banks.duplicate_rule import same_fact
from banks.models import Bank
from banks.providers import bank_embedder, get_llm
from banks.providers.embeddings import TextVectors, cosine
from banks.selectors.near_duplicates import near_duplicate_of
from banks.services.memories import memory_retain

DEFAULTS = {"enabled": True, "importance_threshold": 0.4, "max_facts_per_turn": 3, "dedup_threshold": 0.85}
CATEGORIES = {"preference": "user_preference", "fact": "knowledge", "plan": "goal", "instruction": "correction"}


def ingest_settings(bank: Bank) -> dict[str, Any]:
    configured = (bank.config or {}).get("auto_ingest") or {}
    return {**DEFAULTS, **{k: v for k, v in configured.items() if k in DEFAULTS}}


@dataclass
class IngestOutcome:
    extracted: int = 0
    below_threshold: int = 0
    duplicates: int = 0
    stored: list[str] = field(default_factory=list)
    disabled: bool = False


def ingest_turn(*, bank: Bank, user_message: str, assistant_message: str, actor: str,
                turn_id: str = "", session_id: str = "") -> IngestOutcome:
    settings = ingest_settings(bank)
    outcome = IngestOutcome()
    if not settings["enabled"]:
        outcome.disabled = True
        return outcome
    facts = get_llm().extract_facts(user_message or "", assistant_message or "")
    outcome.extracted = len(facts)
    kept = [f for f in facts if f.importance >= float(settings["importance_threshold"])]
    outcome.below_threshold = len(facts) - len(kept)
    kept.sort(key=lambda f: -f.importance)
    kept = kept[: int(settings["max_facts_per_turn"])]
    embedder = bank_embedder(bank)
    # A fact's vector serves its duplicate look and, unless its session gives it a context, its retain.
    vectors = TextVectors(embedder)
    threshold = float(settings["dedup_threshold"])
    accepted: list[tuple[str, list[float]]] = []
    for fact in kept:
        vector = vectors.of(fact.text)
        nearest = near_duplicate_of(bank, fact.text, vector, embedder.dimensions, threshold=threshold,
                                    model=embedder.name)
        if nearest or any(cosine(vector, v) >= threshold and same_fact(fact.text, t) for t, v in accepted):
            outcome.duplicates += 1
            continue
        category = CATEGORIES.get(fact.category, fact.category)
        result = memory_retain(bank=bank, text=fact.text, actor=actor, tags=[category], source="auto-ingest",
                               metadata={"category": category, "importance": fact.importance,
                                         "source_turn": turn_id,
                                         **({"session_id": session_id} if session_id else {})},
                               memory_layer="episodic" if category == "episodic" else "semantic", near_dedup=False,
                               author=actor, by=None,  # a task: the turn was authorised when it was sent
                               vectors=vectors)
        if result.stored:
            outcome.stored.append(result.memory_id or "")
            accepted.append((fact.text, vector))
        else:
            outcome.duplicates += 1
    return outcome
