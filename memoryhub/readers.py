"""Who is reading, and through which surface: noted by each interface, read by the access log.

An interface (the REST views, the MCP server, the operator pages) says once per request who its caller
is; the usage recorder reads it when a recall, reflect or read names memories, so no service has to
carry the caller through every call. Outside any such scope (a task, a command) the reader is the system.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass

SURFACES = ("api", "mcp", "ui", "internal")


@dataclass(frozen=True)
class Reader:
    who: str
    surface: str


SYSTEM = Reader("system", "internal")
_reader: ContextVar[Reader | None] = ContextVar("memoryhub_reader", default=None)


def current_reader() -> Reader:
    return _reader.get() or SYSTEM


def reader_note(who: str, surface: str) -> None:
    """The caller of the current scope (opened with ``reader_scope``), once it is known."""
    _reader.set(Reader(who[:200], surface))


def reader_scope_open() -> Token[Reader | None]:
    return _reader.set(None)


def reader_scope_close(token: Token[Reader | None]) -> None:
    _reader.reset(token)


@contextmanager
def reading_as(who: str, surface: str) -> Iterator[None]:
    """Reads inside are noted as ``who``'s, through ``surface``."""
    token = _reader.set(Reader(who[:200], surface))
    try:
        yield
    finally:
        _reader.reset(token)
