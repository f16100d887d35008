"""Each staff user sees in the admin only the rows of the banks they hold a role on.

The admin's listings, change pages, actions, autocompletes and bank choices all start from
``get_queryset`` (and, for a form's bank field, ``formfield_for_foreignkey``), so filtering there
scopes every page at once: another bank's row is a 404, as on every other surface. The filter is a
subquery inside the page's own statement, never one more query per page or per row. Superusers see
every bank.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db.models import BooleanField, ForeignKey, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.forms import ModelChoiceField
from django.http import Http404, HttpRequest

from banks.models import ApiToken, Bank, BankMembership


def member_bank_pks(user: AbstractBaseUser | AnonymousUser) -> QuerySet[BankMembership, Any]:
    """The primary keys of the banks ``user`` holds a membership on, as a subquery."""
    return BankMembership.objects.filter(user_id=user.pk or 0).values("bank_id")


def scoped_to_banks(queryset: QuerySet[Any], user: AbstractBaseUser | AnonymousUser, bank_field: str
                    ) -> QuerySet[Any]:
    """``queryset`` narrowed to the rows whose ``bank_field`` (a path to a bank's primary key) names
    one of ``user``'s banks; everything for a superuser."""
    if getattr(user, "is_superuser", False):
        return queryset
    return queryset.filter(**{f"{bank_field}__in": member_bank_pks(user)})


# A token is a staff user's to see when they minted it, or when every bank its grants name is one of
# theirs. A glob grant ("team-*") names banks not created yet, so it is within nobody's banks.
_GRANTS_WITHIN = (
    "(CASE WHEN jsonb_typeof(banks_apitoken.grants) = 'array' AND jsonb_array_length(banks_apitoken.grants) > 0 "
    "THEN NOT EXISTS ("
    "SELECT 1 FROM jsonb_array_elements(banks_apitoken.grants) AS g WHERE NOT COALESCE(g->>'bank', '') IN ("
    "SELECT b.bank_id FROM banks_bank b JOIN banks_bankmembership m ON m.bank_id = b.id "
    "WHERE m.user_id = %s AND b.deleted_at IS NULL)) ELSE false END)"
)


def tokens_within_banks(queryset: QuerySet[ApiToken], user: AbstractBaseUser | AnonymousUser) -> QuerySet[ApiToken]:
    if getattr(user, "is_superuser", False):
        return queryset
    # Vetted: a constant statement; the user's id is a parameter.
    within = RawSQL(_GRANTS_WITHIN, [user.pk or 0], output_field=BooleanField())  # noqa: S611
    return queryset.filter(Q(created_by_id=user.pk or 0) | Q(within))


class BankScopedAdmin:
    """Mixin (before the ModelAdmin base) for an admin over a bank's rows. ``bank_field`` is the path
    from the model to its bank's primary key: ``"bank"`` for most, ``"pk"`` for the bank itself; an
    admin whose rows belong to banks otherwise (tokens) overrides ``scope``."""

    bank_field = "bank"

    def scope(self, queryset: QuerySet[Any], user: AbstractBaseUser | AnonymousUser) -> QuerySet[Any]:
        return scoped_to_banks(queryset, user, self.bank_field)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return self.scope(super().get_queryset(request), request.user)  # type: ignore[misc]

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Any:
        # Django redirects to the index on a row it cannot find; another bank's row (or none) is a 404,
        # the same answer whether or not it exists, as on every other surface.
        obj = super().get_object(request, object_id, from_field)  # type: ignore[misc]
        if obj is None:
            raise Http404("No such row among your banks.")
        return obj

    def formfield_for_foreignkey(self, db_field: ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any
                                 ) -> ModelChoiceField | None:
        # A bank chosen in a form (a membership, a webhook source) is one of the user's banks.
        if db_field.related_model is Bank and "queryset" not in kwargs:
            kwargs["queryset"] = scoped_to_banks(Bank.objects.all(), request.user, "pk")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]
