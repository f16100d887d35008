"""What a statement prepared by name (memoryhub.postgres.prepared) stands for, for tests that read the
statements a request sent: those run as ``EXECUTE memoryhub_<hash>(...)`` once their connection has
prepared them, possibly in an earlier test."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from memoryhub.postgres import prepared

_TEXTS: dict[str, str] = {}
_EXECUTE = re.compile(r"^\s*EXECUTE\s+(\w+)")
# A PREPARE's head, with the parameter types it may declare: what comes after it is the statement.
_PREPARE = re.compile(r"^\s*PREPARE\s+\w+\s*(?:\([^)]*\))?\s*AS\s+", re.IGNORECASE)


@pytest.fixture
def prepared_texts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Record the text behind each name while the test runs (every call passes through here, cached or not)."""
    original = prepared._prepared_form

    def recording(sql: str) -> tuple[str, str, tuple[str, ...] | int]:
        form = original(sql)
        _TEXTS[form[0]] = sql
        return form

    monkeypatch.setattr(prepared, "_prepared_form", recording)
    yield


def prepared_body(sql: str) -> str:
    """The statement a PREPARE prepares (any other statement as it is)."""
    return _PREPARE.sub("", sql, count=1)


def ran(statements: list[str]) -> list[str]:
    """The statements that ran, as written: an EXECUTE by the text of the statement it runs; a PREPARE
    (which runs nothing) left out."""
    texts = []
    for sql in statements:
        if _PREPARE.match(sql):
            continue
        found = _EXECUTE.match(sql)
        texts.append(_TEXTS.get(found.group(1), sql) if found else sql)
    return texts
