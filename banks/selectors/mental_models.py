"""Mental model reads: lists, revisions, and the difference between two revisions."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from banks.models import Bank, MentalModel, MentalModelRevision
from memoryhub.errors import NotFound
from memoryhub.replica import tolerates_lag


def mental_model_list(*, bank: Bank, scope: str | None = None, kind: str | None = None) -> QuerySet[MentalModel]:
    rows = MentalModel.objects.live().filter(bank=bank).select_related("bank")
    if scope:
        rows = rows.filter(scope=scope)
    if kind:
        rows = rows.filter(kind=kind)
    return rows.order_by("-refreshed_at", "model_id")


@tolerates_lag
def mental_models_listed(bank: Bank, *, scope: str | None = None, kind: str | None = None,
                         by_priority: bool = False, limit: int = 1000) -> list[MentalModel]:
    """The list the API and the agent tools answer with (mental models, or directives by priority): read
    from the replica when one serves this bank, as recall is (past the bank's own latest write). The
    operator pages keep ``mental_model_list`` on the primary: they show what was just saved."""
    rows = mental_model_list(bank=bank, scope=scope, kind=kind)
    if by_priority:
        rows = rows.order_by("-priority", "created_at")
    return list(rows[:limit])


def revision_list(*, model: MentalModel) -> QuerySet[MentalModelRevision]:
    return MentalModelRevision.objects.filter(bank_id=model.bank_id, model=model).order_by("-number")


def revision_get(*, model: MentalModel, number: int) -> MentalModelRevision:
    row = MentalModelRevision.objects.filter(bank_id=model.bank_id, model=model, number=number).first()
    if row is None:
        raise NotFound(f"revision {number} of mental model '{model.model_id}' not found")
    return row


@dataclass
class DiffRow:
    """One line pair of a side-by-side diff; ``kind`` is equal, delete, insert or replace."""

    kind: str
    left: str | None
    right: str | None
    left_no: int | None
    right_no: int | None


@dataclass
class RevisionDiff:
    from_revision: int
    to_revision: int
    unified: str
    rows: list[DiffRow] = field(default_factory=list)
    sections_added: list[str] = field(default_factory=list)
    sections_removed: list[str] = field(default_factory=list)
    sections_changed: list[str] = field(default_factory=list)


def _sections(doc: dict[str, Any] | None) -> dict[str, Any]:
    return {s["id"]: s for s in (doc or {}).get("sections", [])}


def revision_diff(*, model: MentalModel, from_revision: int, to_revision: int) -> RevisionDiff:
    a = revision_get(model=model, number=from_revision)
    b = revision_get(model=model, number=to_revision)
    left, right = a.content.splitlines(), b.content.splitlines()
    diff = RevisionDiff(
        from_revision=from_revision, to_revision=to_revision,
        unified="\n".join(difflib.unified_diff(left, right, f"revision {from_revision}", f"revision {to_revision}",
                                               lineterm="")),
    )
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=left, b=right, autojunk=False).get_opcodes():
        span = max(i2 - i1, j2 - j1)
        for k in range(span):
            li, rj = i1 + k, j1 + k
            diff.rows.append(DiffRow(
                kind=tag,
                left=left[li] if li < i2 else None, right=right[rj] if rj < j2 else None,
                left_no=li + 1 if li < i2 else None, right_no=rj + 1 if rj < j2 else None,
            ))
    sa, sb = _sections(a.structured_doc), _sections(b.structured_doc)
    diff.sections_added = [s for s in sb if s not in sa]
    diff.sections_removed = [s for s in sa if s not in sb]
    diff.sections_changed = [s for s in sb if s in sa and sa[s] != sb[s]]
    return diff
