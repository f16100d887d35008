"""Statements sent on nearly every request, prepared once per database session and executed by name.

Parsing and planning a statement is a third of what the database spends on a recall's small
statements and a quarter of a retain's (``log_parser_stats`` / ``log_planner_stats`` on the load
bench's statements: 0.34 + 0.60 of 2.46 ms a recall, 0.69 + 0.63 of 5.21 ms a retain). The statements routed
here have a fixed text (values are parameters) and a plan that does not depend on the values: a key
lookup, an insert, an update by key. Each connection prepares such a statement on first use
(``PREPARE``, parameter types inferred from the statement) and afterwards sends ``EXECUTE name(...)``:
PostgreSQL plans it with its values for the first five runs and then keeps a generic plan where that
costs no more. ``bench/statement_cpu.py --requests 500``, four alternated pairs on the load bench's bank:
recall 3.59 → 3.35 ms of the database's CPU, retain 4.30 → 3.61 ms (docs/benchmarks.md, "Statements
prepared once per connection").

Left to plain execution:
- statements whose best plan depends on their values (the keyword arm's BM25 and word counts, whose
  plans follow each word's frequency; the graph walks, exact on a small bank and through the graph on
  a large one);
- a connection whose session is not the client's (``MEMORYHUB_DB_SESSION_SETTINGS`` off, behind a
  transaction-pooling proxy, where the next transaction may land on a session that never saw the
  ``PREPARE``) or does not outlive its request (``CONN_MAX_AGE`` 0: preparing would cost a round trip
  on every request and save nothing);
- server-side binding (``EXECUTE`` takes literals, not bind parameters): only a client-side binding
  cursor, Django's default, prepares.

A prepared statement lives as long as its session, whatever becomes of the transaction it was made
in; a new connection starts with none (the names are kept on the driver's connection object, which
goes with it). PostgreSQL plans a prepared statement again when a table it reads changes (a migration,
an ``ANALYZE``). At most ``MAX_PER_CONNECTION`` statements are prepared on one connection; past that,
statements run plainly.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from django.conf import settings
from psycopg import ClientCursor

# The callers route a few dozen fixed texts here; the bound only guards against a text built per call.
MAX_PER_CONNECTION = 200
_NAMES = "_memoryhub_prepared"  # the set of names prepared on a driver connection
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%s|%%")


@lru_cache(maxsize=512)
def _prepared_form(sql: str) -> tuple[str, str, tuple[str, ...] | int]:
    """(name, the PREPARE statement, the parameters' order): positional ``%s`` become ``$1..$n`` in order;
    named ``%(key)s`` become one ``$k`` per key, numbered by first appearance; ``%%`` becomes ``%``."""
    keys: list[str] = []
    positional = 0

    def number(found: re.Match[str]) -> str:
        nonlocal positional
        if found.group(0) == "%%":
            return "%"
        if found.group(1):
            if found.group(1) not in keys:
                keys.append(found.group(1))
            return f"${keys.index(found.group(1)) + 1}"
        positional += 1
        return f"${positional}"

    body = _PLACEHOLDER.sub(number, sql)
    if keys and positional:
        raise ValueError("a statement mixes named and positional placeholders")
    name = "memoryhub_" + hashlib.blake2b(sql.encode(), digest_size=8).hexdigest()
    return name, f"PREPARE {name} AS {body}", tuple(keys) if keys else positional


def _prepares(cursor: Any) -> bool:
    db = cursor.db
    max_age = db.settings_dict.get("CONN_MAX_AGE", 0)
    return (bool(settings.MEMORYHUB_DB_SESSION_SETTINGS) and (max_age is None or max_age > 0)
            and isinstance(getattr(cursor, "cursor", None), ClientCursor))


def execute_prepared(cursor: Any, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> None:
    """Run ``sql`` (``%s`` or ``%(key)s`` placeholders, a fixed text) on Django's ``cursor`` as a statement
    prepared on its connection, or plainly where preparing does not pay (see the module's docstring).
    Read its rows from ``cursor`` as after ``cursor.execute``."""
    if not _prepares(cursor):
        cursor.execute(sql, params)
        return
    name, prepare, order = _prepared_form(sql)
    if isinstance(order, tuple):
        if not isinstance(params, Mapping):
            raise TypeError("named placeholders need a mapping of parameters")
        values = [params[key] for key in order]
    else:
        values = list(params)
        if len(values) != order:
            raise TypeError(f"the statement takes {order} parameters, {len(values)} given")
    raw = cursor.db.connection
    names: set[str] | None = getattr(raw, _NAMES, None)
    if names is None:
        names = set()
        setattr(raw, _NAMES, names)
    if name not in names:
        if len(names) >= MAX_PER_CONNECTION:
            cursor.execute(sql, params)
            return
        cursor.execute(prepare)  # no parameters: sent as written, % included
        names.add(name)
    cursor.execute(f"EXECUTE {name}({', '.join(['%s'] * len(values))})" if values else f"EXECUTE {name}", values)


__all__ = ["MAX_PER_CONNECTION", "execute_prepared"]
