"""Reflect: recall, then let the language model answer from what was recalled, citing it.

Active directives come first in the passages the model sees, as instructions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from banks.models import Bank
from banks.providers import get_llm
from banks.providers.llm_types import Passage
from banks.selectors.multibank import recall_many
from banks.selectors.recall import RecallFilters, RecallHit, recall_bank
from banks.services.usage import usage_record_reflect

REFLECT_RECALL_RESULTS = 20


@dataclass
class ReflectOutcome:
    answer: str
    confidence: float | None
    # Which language model answered: "extractive" (no model configured) stitches recalled sentences
    # together, and its confidence is only their word overlap with the question, not a judgement.
    answered_by: str = ""
    sources: list[RecallHit] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    directives: list[str] = field(default_factory=list)


def reflect(
    *, banks: list[Bank], query: str, max_tokens: int | None = None, tags: list[str] | None = None,
    include_directives: bool = True, strategy: str = "parallel",
) -> ReflectOutcome:
    filters = RecallFilters(tags=tags)
    if len(banks) == 1:
        outcome = recall_bank(banks[0], query, max_results=REFLECT_RECALL_RESULTS, filters=filters,
                              include_directives=include_directives, include_observations=True)
    else:
        outcome = recall_many(banks, query, strategy=strategy, max_results=REFLECT_RECALL_RESULTS,
                              filters=filters, include_directives=include_directives, include_observations=True)
    directives = [h.text for h in outcome.hits if h.layer == "directive"]
    observations = [h.text for h in outcome.hits if h.layer == "observation"]
    evidence = [h for h in outcome.hits if h.layer not in {"directive"}]
    passages = [Passage(memory_id=h.memory_id, text=h.text, score=h.score) for h in evidence]
    answer = get_llm().answer(query, passages, max_chars=max_tokens * 4 if max_tokens else None)
    if directives:
        # The extractive model cannot follow rules; it states them so the caller sees they applied.
        if get_llm().name == "extractive":
            answer.text = " ".join(f"[Directive] {d}" for d in directives) + (" " + answer.text if answer.text else "")
    by_id = {h.memory_id: h for h in evidence}
    sources = [by_id[i] for i in answer.cited_ids if i in by_id]
    usage_record_reflect(banks, sources)
    return ReflectOutcome(answer=answer.text, confidence=answer.confidence, answered_by=get_llm().name,
                          sources=sources, observations=observations, directives=directives)
