"""timestamptz values are read in C (memoryhub.postgres.timestamps) and come out as Django's own loader
gives them: the same instant, the same tzinfo, the same error where Django's loader fails."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.db.backends.postgresql.psycopg_any import register_tzloader
from psycopg.pq import Format

from memoryhub.postgres.timestamps import IsoTzLoader

pytestmark = pytest.mark.django_db(transaction=True)

TIMESTAMPTZ_OID = 1184
VALUES = [
    "2026-11-26 13:42:36.688123+00", "2026-11-26 13:42:36.6+00", "2026-11-26 13:42:36+00",
    "2026-03-29 02:30:00+02", "1900-01-01 00:00:00+00", "1883-11-18 11:00:00-05",  # old zones' odd offsets
    "0001-01-01 00:00:00+00", "0001-01-01 12:00:00+00", "9999-12-31 23:59:59.999999+00",
    "9999-12-31 20:00:00+00",  # past the end once moved to a zone east of UTC
    "infinity", "-infinity", "0044-03-15 00:00:00+00 BC",
]


def _read(literal: str, *, djangos: bool) -> tuple[str, Any]:
    with connection.cursor() as cursor:
        if djangos:
            register_tzloader(connection.timezone, cursor.cursor)
        try:
            cursor.execute("SELECT %s::timestamptz", [literal])
            value = cursor.fetchone()[0]
        except Exception as exc:  # noqa: BLE001  (the error is what is compared)
            return "error", (type(exc), str(exc))
    return "value", (value, repr(value), value.utcoffset())


def test_connections_read_timestamptz_with_the_iso_loader():
    connection.ensure_connection()
    loader = connection.connection.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)
    assert issubclass(loader, IsoTzLoader)
    assert loader.timezone is connection.timezone  # Django's create_cursor keeps it


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/St_Johns", "Pacific/Kiritimati"])
def test_every_value_and_error_is_djangos(zone: str):
    with transaction.atomic(), connection.cursor() as cursor:
        # The session's zone as a pooler or a statement might leave it: Django's loader still decides.
        cursor.execute("SELECT set_config('TimeZone', %s, true)", [zone])
        for literal in VALUES:
            assert _read(literal, djangos=False) == _read(literal, djangos=True), (zone, literal)


def test_another_datestyle_fails_as_djangos_loader_does():
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL DateStyle = 'SQL, DMY'")
        ours, djangos = _read("2026-11-26 13:42:36+00", djangos=False), _read("2026-11-26 13:42:36+00", djangos=True)
    assert ours == djangos
