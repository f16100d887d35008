"""What cites a memory: observations that hold it as evidence and mental models built from it."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import CharField, Value

from banks.models import Bank, MentalModel, Observation


@dataclass(frozen=True)
class Citation:
    kind: str  # "observation" | "model"
    record_id: str
    label: str


def memory_citations(*, bank: Bank, memory_id: str, limit: int = 40) -> list[Citation]:
    """Both kinds in one query (a UNION), observations first."""
    observations = (Observation.objects.filter(bank=bank, deleted_at__isnull=True, evidence__bank_id=bank.pk,
                                               evidence__memory_ref=memory_id)
                    .annotate(cited_as=Value("observation", output_field=CharField()))
                    .values_list("cited_as", "observation_id", "text"))
    models = (MentalModel.objects.live().filter(bank=bank, source_ids__contains=[memory_id])
              .annotate(cited_as=Value("model", output_field=CharField()))
              .values_list("cited_as", "model_id", "title"))
    rows = observations.union(models).order_by("-cited_as", "text")[:limit]
    return [Citation(kind=k, record_id=r, label=t) for k, r, t in rows]
