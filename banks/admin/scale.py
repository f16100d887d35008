"""Admin building blocks that stay cheap on tables of millions of rows.

* ``CappedPaginator`` counts at most ``COUNT_CAP`` rows (a COUNT over a LIMITed subquery).
* ``IndexedValuesFilter`` lists the distinct values of an indexed column by walking the index
  (a loose index scan), never with a DISTINCT over the table.
* ``FixedChoicesFilter`` offers a fixed list of values and runs no query to build it.
* ``ScaledAdmin`` turns all of this on, and drops Django's raw "delete selected" action.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import Field, Model, Q, QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property

COUNT_CAP = 10_000
MAX_FILTER_CHOICES = 50


class CappedPaginator(Paginator):
    """Past ``COUNT_CAP`` rows the changelist says COUNT_CAP + 1 and offers no further pages: reading
    page 5,000 of a million rows is a job for the curation search, not for OFFSET."""

    @cached_property
    def count(self) -> int:
        rows = self.object_list
        if isinstance(rows, QuerySet):
            return rows.values("pk")[: COUNT_CAP + 1].count()
        return len(rows)


class FixedChoicesFilter(admin.SimpleListFilter):
    """Filter on a column with a known list of values; anything else is reachable through search."""

    field_name = ""
    values: tuple[tuple[str, str], ...] = ()

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> tuple[tuple[str, str], ...]:
        return self.values

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(**{self.field_name: value}) if value else queryset


class IndexedValuesFilter(admin.SimpleListFilter):
    """The first ``MAX_FILTER_CHOICES`` distinct values of a btree-indexed column, one index probe
    per value: cost grows with the number of values, not rows."""

    field_name = ""

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        model: type[Model] = model_admin.model
        field = model._meta.get_field(self.field_name)
        if not isinstance(field, Field) or not field.column:
            raise TypeError(f"{self.field_name} is not a column of {model.__name__}")
        table = connection.ops.quote_name(model._meta.db_table)
        column = connection.ops.quote_name(field.column)
        # Vetted: table and column names come from the model's own metadata, quoted; the cap is a parameter.
        sql = (
            f"WITH RECURSIVE walk(value) AS ((SELECT {column} FROM {table} WHERE {column} IS NOT NULL "  # noqa: S608
            f"ORDER BY {column} LIMIT 1) UNION ALL SELECT (SELECT {column} FROM {table} "
            f"WHERE {column} > walk.value ORDER BY {column} LIMIT 1) FROM walk WHERE walk.value IS NOT NULL) "
            "SELECT value FROM walk WHERE value IS NOT NULL LIMIT %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [MAX_FILTER_CHOICES])
            return [(row[0], row[0]) for row in cursor.fetchall()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(**{self.field_name: value}) if value else queryset


class ScaledAdmin(admin.ModelAdmin):
    """Defaults for an admin over a big table. Subclasses list every foreign key to a big table in
    ``raw_id_fields`` or ``autocomplete_fields`` (never a <select> of every row)."""

    paginator = CappedPaginator
    show_full_result_count = False
    list_per_page = 50

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        # Django's bulk delete bypasses the services: no audit event, no cleanup. Deletions that
        # are allowed here are service-backed actions of each admin.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    # Subclasses answer a search term with a condition an index serves; None matches nothing.
    def search_condition(self, term: str) -> Q | None:
        return None

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
                           ) -> tuple[QuerySet[Any], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        condition = self.search_condition(term)
        return (queryset.filter(condition) if condition is not None else queryset.none()), False


class ReadOnlyAdmin(ScaledAdmin):
    """Rows the application writes through its services only: the admin shows them."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def exact_id(term: str) -> bool:
    """Whether a search term could be an identifier (one word), worth an exact lookup."""
    return bool(term) and not any(c.isspace() for c in term) and len(term) <= 255
