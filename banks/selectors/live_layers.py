"""Live-memory layers put in front of raw recall hits: directives, then observations.

Directives of the bank that are active and in scope come first (layer
``directive``); observations follow when asked for (layer ``observation``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from banks.models import Bank, MentalModel

if TYPE_CHECKING:
    from banks.selectors.recall import RecallFilters, RecallHit, RecallTrace


def directive_in_scope(scope: str, filters: RecallFilters) -> bool:
    if scope in ("bank", "") or scope.startswith("bank:"):
        return True
    if scope.startswith("tag:"):
        return bool(filters.tags) and scope[4:] in (filters.tags or [])
    return False


def add_live_layers(
    bank: Bank, query: str, hits: list[RecallHit], total: int, trace: RecallTrace, *,
    filters: RecallFilters, max_results: int, include_directives: bool, include_observations: bool,
) -> tuple[list[RecallHit], int]:
    from banks.selectors.recall import RecallHit

    front: list[RecallHit] = []
    if include_directives:
        directives = (MentalModel.objects.live().directives().filter(bank=bank, is_active=True)
                      .order_by("-priority", "created_at"))
        for directive in directives:
            if not directive_in_scope(directive.scope, filters):
                continue
            front.append(RecallHit(
                memory_id=directive.model_id, text=_rule_text(directive), score=1.0, bank_id=bank.bank_id,
                fact_type="directive", metadata={"scope": directive.scope, "revision": directive.revision},
                memory_layer="directive", layer="directive", strategies=["directive"],
                retained_at=directive.refreshed_at,
            ))
        if front:
            trace.strategies_used.insert(0, "directive")
            trace.strategy_candidate_counts["directive"] = len(front)
    return front + hits, total + len(front)


def _rule_text(directive: MentalModel) -> str:
    doc = directive.structured_doc or {}
    for section in doc.get("sections", []):
        for block in section.get("blocks", []):
            if block.get("type") == "paragraph" and block.get("text"):
                return str(block["text"])
    return directive.content.strip()
