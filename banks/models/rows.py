"""Model rows read and written by written-out statements, for what every API request does.

Composing a query with the ORM costs about three times what running a primary-key-like lookup
does (measured: 600 µs of Python against 190 µs this way). The API token and the bank are read on
every request, a retain inserts its memory and audit event: those go through here. Rows still
become normal model instances, with each field's own conversion to and from the database (JSON,
arrays, vectors).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any, TypeVar

from django.db import connections, models, router

from memoryhub.postgres.prepared import execute_prepared

M = TypeVar("M", bound=models.Model)


@cache
def _shape(model: type[models.Model]) -> tuple[str, list[str], list[tuple[int, Callable[..., Any]]]]:
    fields = model._meta.concrete_fields
    columns = ", ".join(connections["default"].ops.quote_name(str(f.column)) for f in fields)
    converters = [(i, f.from_db_value) for i, f in enumerate(fields) if hasattr(f, "from_db_value")]
    # Vetted: column and table names come from the model definition, never from input.
    return f"SELECT {columns} FROM {model._meta.db_table}", [f.attname for f in fields], converters  # noqa: S608


def first_row(model: type[M], where: str, params: Sequence[Any]) -> M | None:
    """The first row of ``model`` matching ``where`` (SQL with %s placeholders, a fixed string:
    values go in ``params``), read where the router sends reads of ``model``."""
    select, names, converters = _shape(model)
    alias = router.db_for_read(model) or "default"
    connection = connections[alias]
    with connection.cursor() as cursor:
        execute_prepared(cursor, f"{select} WHERE {where} LIMIT 1", params)  # noqa: S608  (see the docstring)
        row = cursor.fetchone()
    if row is None:
        return None
    values = list(row)
    for index, convert in converters:
        values[index] = convert(values[index], None, connection)
    return model.from_db(alias, names, values)


@cache
def _insert_shape(model: type[models.Model], names: tuple[str, ...],
                  returning: tuple[str, ...]) -> tuple[str, list[models.Field[Any, Any]]]:
    # A field by its name or its column's attribute name (``bank`` or ``bank_id``).
    by_name = {**{f.attname: f for f in model._meta.concrete_fields}, **{f.name: f for f in model._meta.concrete_fields}}
    fields = [by_name[name] for name in names]
    # Vetted: table and column names come from the model definition, never from input.
    sql = (f"INSERT INTO {model._meta.db_table} ({', '.join(str(f.column) for f in fields)}) "  # noqa: S608
           f"VALUES ({', '.join(['%s'] * len(fields))}) RETURNING {', '.join(returning)}")
    return sql, fields


def insert_row(instance: models.Model, names: Sequence[str], returning: Sequence[str] = ("id",), *,
               formatted: Mapping[str, Any] | None = None) -> tuple[Any, ...]:
    """INSERT the unsaved ``instance``: the fields ``names`` (names or attribute names; the others get
    their database defaults);
    returns the ``returning`` columns (the caller sets them on the instance) and marks it saved.
    ``formatted``: values the caller already put in their database form, by field attribute name."""
    model = type(instance)
    sql, fields = _insert_shape(model, tuple(names), tuple(returning))
    alias = router.db_for_write(model) or "default"
    connection = connections[alias]
    given = formatted or {}
    params = [given[field.attname] if field.attname in given
              else field.get_db_prep_save(getattr(instance, field.attname), connection) for field in fields]
    with connection.cursor() as cursor:
        execute_prepared(cursor, sql, params)
        row = cursor.fetchone()
    instance._state.adding = False
    instance._state.db = alias
    return tuple(row)


__all__ = ["first_row", "insert_row"]
