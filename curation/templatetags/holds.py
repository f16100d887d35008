"""The retention panels of a bank's page (legal holds, lifecycle), self-contained so the overview needs no extra context."""

from __future__ import annotations

from typing import Any

from django import template

from banks.models import Bank
from banks.selectors.holds import bank_holds, bank_lifecycle_policy, lifecycle_runs

register = template.Library()


@register.inclusion_tag("curation/partials/holds.html")
def legal_holds(bank: Bank, can_admin: bool) -> dict[str, Any]:
    return {"bank": bank, "holds": list(bank_holds(bank)), "can_admin": can_admin}


@register.inclusion_tag("curation/partials/lifecycle.html")
def lifecycle_panel(bank: Bank, can_admin: bool) -> dict[str, Any]:
    return {"bank": bank, "policy": bank_lifecycle_policy(bank), "runs": lifecycle_runs(bank),
            "can_admin": can_admin}
