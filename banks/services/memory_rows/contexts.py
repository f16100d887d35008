"""Keeping conversation turns' contexts (banks.turn_context) current as their sessions change.

``turn_context_refresh`` is given rows just written (inserted, edited, moved, erased...) and recomputes
the context of each and of the turns that follow it in its session, where a neighbour arriving late,
changing or going away changes what precedes them. Bounded work: per written row, one indexed look at
its session (``memory_session_turns``) reading at most twice the bank's window plus one turns, and at
most window + 1 contexts rewritten. The contexts (and so the keyword arm's ``context_vector``, a
trigger) change in the caller's transaction; the vectors of the rows whose context changed are made
again once it commits (an embedding may be a remote call: no transaction waits on it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from banks.models import Bank
from banks.providers import bank_embedder
from banks.turn_context import (
    Turn,
    compose_context,
    context_turns,
    embedding_text,
    session_contexts,
    speaker_of,
)
from banks.vectors import vector_literal

# A written row's session, and the turns around it: ``reach`` before (their contexts are not rewritten,
# they make the first ones'), itself and ``reach`` after. Live turns only: an archived or forgotten turn
# is context to nobody (an erased text must not live on in its neighbour's context).
_NEIGHBOURS_SQL = """
SELECT c.id, c.created_at, n.id, n.text, n.metadata, COALESCE(n.occurred_at, n.created_at), n.context, n.created_at
FROM banks_memory c CROSS JOIN LATERAL (
    (SELECT m.id, m.text, m.metadata, m.occurred_at, m.created_at, m.context FROM banks_memory m
      WHERE m.bank_id = c.bank_id AND m.session_key = c.session_key AND m.archived_at IS NULL
        AND m.forgotten_at IS NULL AND (m.created_at, m.id) < (c.created_at, c.id)
      ORDER BY m.created_at DESC, m.id DESC LIMIT %(reach)s)
    UNION ALL
    (SELECT m.id, m.text, m.metadata, m.occurred_at, m.created_at, m.context FROM banks_memory m
      WHERE m.bank_id = c.bank_id AND m.session_key = c.session_key AND m.archived_at IS NULL
        AND m.forgotten_at IS NULL AND (m.created_at, m.id) >= (c.created_at, c.id)
      ORDER BY m.created_at, m.id LIMIT %(reach)s + 1)
) n
WHERE c.bank_id = %(bank)s AND c.id = ANY(%(pks)s) AND c.session_key IS NOT NULL
"""


def _metadata(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        value = json.loads(value)
    return value if isinstance(value, dict) else {}


def _new_contexts(bank: Bank, pks: list[int]) -> dict[int, str | None]:
    """The rows (of ``pks`` and their followers) whose context changes, with the new one."""
    window = context_turns(bank.config)
    reach = max(window, 1)
    with connection.cursor() as cursor:
        cursor.execute(_NEIGHBOURS_SQL, {"reach": reach, "bank": bank.pk, "pks": pks})
        rows = cursor.fetchall()
    around: dict[tuple[Any, int], list[tuple[Any, ...]]] = {}
    for anchor, anchor_created, *row in rows:
        around.setdefault((anchor_created, anchor), []).append(tuple(row))
    changed: dict[int, str | None] = {}
    for anchor_key, neighbours in around.items():
        neighbours.sort(key=lambda r: (r[5], r[0]))  # (created_at, id): the session's order
        # The first turn whose context may change: the written row, or the one after where it was (erased).
        start = sum(1 for r in neighbours if (r[5], r[0]) < anchor_key)
        turns = [Turn(pk=r[0], text=r[1], speaker=speaker_of(_metadata(r[2]), r[1]), when=r[3]) for r in neighbours]
        stored = {r[0]: r[4] for r in neighbours}
        for pk, context in session_contexts(turns, window, start).items():
            if context != stored[pk]:
                changed[pk] = context
    return changed


# The top-level metadata keys the session rule (SQL ``memoryhub_session_key_of``, migration 0029) reads:
# metadata naming none of them is in no session, and nothing needs asking. Kept equal to the function's
# keys by tests/banks/test_turn_context.py, which reads them from the database's definition.
SESSION_METADATA_KEYS = frozenset({"session_id", "chatgpt", "agentos"})

# The turns a new row will follow in its session (the session from its metadata, by the rule the insert
# trigger applies): stored live turns created no later than it (its id, given at insert, is the highest).
_PRECEDING_SQL = """
SELECT s.key, p.text, p.metadata, COALESCE(p.occurred_at, p.created_at)
FROM (SELECT memoryhub_session_key_of(%(metadata)s::jsonb) AS key) s
LEFT JOIN LATERAL (
    SELECT m.text, m.metadata, m.occurred_at, m.created_at, m.id FROM banks_memory m
    WHERE m.bank_id = %(bank)s AND m.session_key = s.key AND m.archived_at IS NULL AND m.forgotten_at IS NULL
      AND m.created_at <= %(created)s
    ORDER BY m.created_at DESC, m.id DESC LIMIT %(window)s) p ON true
"""


def turn_context_ahead(*, bank: Bank, text: str, metadata: dict[str, Any], created_at: datetime,
                       occurred_at: datetime | None) -> str | None:
    """The context a row about to be inserted will have, from the turns of its session already stored
    (None outside a conversation or with the context off): read before the row's vector is made, so a
    turn is embedded once, with its context. The insert's refresh finds it current and embeds nothing
    again unless a turn landed in between (then it rewrites it, and the vector follows the commit)."""
    window = context_turns(bank.config)
    if not window or SESSION_METADATA_KEYS.isdisjoint(metadata):
        return None  # the context off, or no session: every retain outside a conversation skips the statement
    with connection.cursor() as cursor:
        cursor.execute(_PRECEDING_SQL, {"metadata": json.dumps(metadata), "bank": bank.pk, "created": created_at,
                                        "window": window})
        rows = cursor.fetchall()
    if not rows or rows[0][0] is None or not window:
        return None
    previous = [Turn(pk=0, text=r[1], speaker=speaker_of(_metadata(r[2]), r[1]), when=r[3])
                for r in reversed(rows) if r[1] is not None]
    new = Turn(pk=0, text=text, speaker=speaker_of(metadata, text), when=occurred_at or created_at)
    return compose_context(new, previous)


# The session keys of rows about to be inserted (by the rule the insert trigger applies).
_KEYS_SQL = "SELECT memoryhub_session_key_of(md) FROM unnest(%s::jsonb[]) WITH ORDINALITY AS u(md, i) ORDER BY i"

# The turns a bank held of each session before an import began (``upto``: the rows the import's own
# earlier batches landed are known to it already, and may be landing on another thread), no later than
# the first of the import's rows in that session.
_STORED_BEFORE_SQL = """
SELECT s.key, p.text, p.metadata, COALESCE(p.occurred_at, p.created_at), p.created_at, p.id
FROM unnest(%(keys)s::varchar[], %(created)s::timestamptz[]) AS s(key, created)
CROSS JOIN LATERAL (
    SELECT m.text, m.metadata, m.occurred_at, m.created_at, m.id FROM banks_memory m
    WHERE m.bank_id = %(bank)s AND m.session_key = s.key AND m.archived_at IS NULL AND m.forgotten_at IS NULL
      AND m.created_at <= s.created AND m.id <= %(upto)s
    ORDER BY m.created_at DESC, m.id DESC LIMIT %(window)s) p
"""

NewTurnRow = tuple[str, dict[str, Any], datetime, datetime | None]  # text, metadata, created_at, occurred_at


def _metadata_json(metadata: dict[str, Any]) -> str:
    """The metadata as JSON PostgreSQL reads; ``{}`` (no session) for metadata no row may hold (NaN, a lone
    surrogate, NUL): asked before the line check, such a line is refused by it and never stored."""
    try:
        text = json.dumps(metadata, allow_nan=False, ensure_ascii=False)
        text.encode("utf-8")
    except (TypeError, ValueError):
        return "{}"
    return "{}" if "\\u0000" in text else text


class TurnContextsAhead:
    """The contexts the turns of a stream of rows (an import, batch after batch, in its order) will have
    once inserted, computed before their vectors are made so that each turn is embedded once, with it.

    A row's preceding turns are those of the stream before it in its session and, the first time the
    stream meets a session, the turns the bank held of it before the stream began: two queries per
    batch, at most ``window`` turns per session kept. A guess the bank proves wrong (a concurrent
    writer's turn, rows out of time order, a row that does not land) costs only the embedding it meant
    to save: the insert's refresh (``turn_context_refresh``) rewrites that context and embeds again."""

    def __init__(self, bank: Bank) -> None:
        self.bank, self.window = bank, context_turns(bank.config)
        with connection.cursor() as cursor:
            cursor.execute("SELECT COALESCE(max(id), 0) FROM banks_memory WHERE bank_id = %s", [bank.pk])
            self.upto = int(cursor.fetchone()[0])
        # Per session: its last turns so far, oldest first, each with its place (created_at, then order:
        # the bank's stored turns before the stream's, the stream's in its order, as ids are given).
        self.tails: dict[str, list[tuple[tuple[datetime, int], Turn]]] = {}
        self.order = 0

    def contexts(self, rows: Sequence[NewTurnRow]) -> list[str | None]:
        """The context of each of ``rows``: None outside a session (or with the bank's context off)."""
        if not rows or not self.window:
            return [None] * len(rows)
        with connection.cursor() as cursor:
            cursor.execute(_KEYS_SQL, [[_metadata_json(metadata) for _, metadata, _, _ in rows]])
            keys: list[str | None] = [row[0] for row in cursor.fetchall()]
        self._meet({key: created for key, (_, _, created, _) in reversed(list(zip(keys, rows, strict=True)))
                    if key is not None and key not in self.tails})
        out: list[str | None] = []
        for key, (text, metadata, created, occurred) in zip(keys, rows, strict=True):
            if key is None:
                out.append(None)
                continue
            tail = self.tails[key]
            self.order += 1
            place = (created, self.order)
            turn = Turn(pk=0, text=text, speaker=speaker_of(metadata, text), when=occurred or created)
            out.append(compose_context(turn, [t for p, t in tail if p < place][-self.window:]))
            tail.append((place, turn))
            tail.sort(key=lambda item: item[0])
            del tail[:-self.window]
        return out

    def _meet(self, first: dict[str, datetime]) -> None:
        """Sessions the stream meets for the first time (by the created_at of its first row in each)."""
        if not first:
            return
        for key in first:
            self.tails[key] = []
        with connection.cursor() as cursor:
            cursor.execute(_STORED_BEFORE_SQL, {"keys": list(first), "created": list(first.values()),
                                                "bank": self.bank.pk, "upto": self.upto, "window": self.window})
            for key, text, metadata, when, created, pk in cursor.fetchall():
                # Stored before the stream began: placed before any of its rows made at the same time.
                self.tails[key].append(((created, pk - self.upto - 1), Turn(
                    pk=0, text=text, speaker=speaker_of(_metadata(metadata), text), when=when)))
        for tail in (self.tails[key] for key in first):
            tail.sort(key=lambda item: item[0])


def turn_context_refresh(*, bank: Bank, pks: Iterable[int], text_changed: bool = False, vectors: bool = True) -> int:
    """Recompute the contexts the rows ``pks`` of ``bank`` touch (see the module); returns how many changed.

    ``text_changed``: the rows got a new text (and a vector of it alone): the turns among them are embedded
    again with their context even where it did not change. Runs in the caller's transaction; the vectors
    follow after its commit (``turn_vectors_refresh``), unless ``vectors`` is False (a bench's bulk load
    keeps vectors of its own)."""
    keys = sorted({int(pk) for pk in pks})
    if not keys:
        return 0
    changed = _new_contexts(bank, keys)
    embed = set(changed)
    if text_changed:
        with connection.cursor() as cursor:
            cursor.execute("SELECT id FROM banks_memory WHERE bank_id = %s AND id = ANY(%s) AND context IS NOT NULL",
                           [bank.pk, keys])
            embed |= {row[0] for row in cursor.fetchall()}
    if embed and vectors:
        again = sorted(embed)
        # robust: a provider failing then leaves those vectors as they were (the write stands), logged.
        transaction.on_commit(lambda: turn_vectors_refresh(bank=bank, pks=again), robust=True)
    if not changed:
        return 0
    ids = list(changed)
    with connection.cursor() as cursor:
        # Only the context: the memory's own columns (its text, updated_at for the changes feed) stay as
        # they are; the trigger re-computes the keyword arm's vector from text and context.
        cursor.execute("UPDATE banks_memory m SET context = v.context "
                       "FROM unnest(%s::bigint[], %s::text[]) AS v(id, context) "
                       "WHERE m.id = v.id AND m.bank_id = %s", [ids, [changed[i] for i in ids], bank.pk])
    return len(ids)


def turn_context_followers(*, bank: Bank, pks: Iterable[int]) -> list[int]:
    """The turns whose context holds one of ``pks``: read before those rows lose their text or go (an
    erase purges the session with the text), and refreshed after it (``turn_context_refresh``)."""
    keys = sorted({int(pk) for pk in pks})
    if not keys:
        return []
    reach = max(context_turns(bank.config), 1)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT n.id FROM banks_memory c CROSS JOIN LATERAL (SELECT m.id FROM banks_memory m "
            "WHERE m.bank_id = c.bank_id AND m.session_key = c.session_key AND m.archived_at IS NULL "
            "AND m.forgotten_at IS NULL AND (m.created_at, m.id) > (c.created_at, c.id) "
            "ORDER BY m.created_at, m.id LIMIT %s) n "
            "WHERE c.bank_id = %s AND c.id = ANY(%s) AND c.session_key IS NOT NULL AND NOT n.id = ANY(%s)",
            [reach, bank.pk, keys, keys])
        return [row[0] for row in cursor.fetchall()]


def turn_vectors_refresh(*, bank: Bank, pks: list[int]) -> int:
    """Embed again, with its context, each of ``pks`` that has a vector of the bank's model; returns how many.

    A row edited meanwhile (other text, other context, other model) is left to the refresh its edit runs."""
    embedder = bank_embedder(bank)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, text, context, content_hash FROM banks_memory WHERE bank_id = %s "
                       "AND id = ANY(%s) AND embedding_model = %s AND embedding_dims = %s",
                       [bank.pk, pks, embedder.name, embedder.dimensions])
        rows = cursor.fetchall()
    if not rows:
        return 0
    vectors = embedder.embed([embedding_text(text, context) for _, text, context, _ in rows])
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE banks_memory m SET embedding = v.embedding::vector FROM unnest(%s::bigint[], %s::text[], "
            "%s::text[], %s::text[]) AS v(id, embedding, context, content_hash) WHERE m.id = v.id "
            "AND m.bank_id = %s AND m.content_hash = v.content_hash AND m.context IS NOT DISTINCT FROM v.context "
            "AND m.embedding_model = %s",
            [[r[0] for r in rows], [vector_literal(v) for v in vectors], [r[2] for r in rows], [r[3] for r in rows],
             bank.pk, embedder.name])
        return cursor.rowcount
