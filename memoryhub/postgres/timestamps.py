"""Reading ``timestamptz`` values at C speed, with the values Django's own loader gives.

Django reads every ``timestamptz`` through a pure-Python loader (psycopg's text loader, a regular
expression per value, under Django's subclass that sets the connection's zone): about 4.4 µs of a web
worker's CPU a value, so a recall's token, bank and hits (13 values) cost about 60 µs and a page of
rows far more (docs/benchmarks.md, "The web worker's own Python"). Python's ``datetime.fromisoformat``
parses PostgreSQL's ISO output in C. Whatever it does not take (infinity, years before 1 or after
9999, another ``DateStyle``) goes to Django's loader as before, and so does a shift into the
session's zone that overflows, so every value and every error is the one Django's loader gives.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from functools import lru_cache
from typing import Any

from django.db.backends.postgresql.psycopg_any import BaseTzLoader
from psycopg import adapt


class IsoTzLoader(BaseTzLoader):
    """Django's loader for one zone (``timezone``), reading ISO text with ``datetime.fromisoformat``."""

    def load(self, data: Any) -> datetime:
        try:
            parsed = datetime.fromisoformat(bytes(data).decode("ascii"))
            # As psycopg's loader: the instant in the session's zone; then Django's zone on it.
            moved = parsed.astimezone(self._timezone)
        except (ValueError, OverflowError, UnicodeDecodeError):
            return super().load(data)
        return moved.replace(tzinfo=self.timezone)


@lru_cache
def iso_adapters(template: adapt.AdaptersMap, zone: tzinfo | None) -> adapt.AdaptersMap:
    """Django's adapters ``template`` (one per zone, shared: never changed here) with ``IsoTzLoader``
    for ``zone`` in place of Django's ``timestamptz`` loader. Django's ``create_cursor`` compares the
    loader's ``timezone`` with the connection's, so it keeps this one."""
    loader = type("IsoTzLoaderForZone", (IsoTzLoader,), {"timezone": zone})
    adapters = adapt.AdaptersMap(template)
    adapters.register_loader("timestamptz", loader)
    return adapters
