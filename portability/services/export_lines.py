"""AMA memory lines built by PostgreSQL and streamed with COPY: an export at the speed of ``COPY TO``.

Building a ``Memory`` object, its entities and links and a dict per row, then ``json.dumps``,
cost the exporter most of its time. Here one ``COPY (SELECT ...) TO STDOUT`` returns each line
already written, in the very bytes ``record_to_line`` + ``dumps_line`` produce:

* strings go through ``to_jsonb(x)::text``, which escapes exactly what Python's
  ``json.dumps(ensure_ascii=False)`` escapes (``"``, ``\\``, control characters, lower-case
  ``\\u00XX``), and ``jsonb::text`` uses the same ``", "`` / ``": "`` separators;
* times are rendered as ``datetime.isoformat()`` in UTC (microseconds only when not zero);
* keys come in the order ``record_to_line`` writes them; empty values are left out the same way.

Two pieces Python still renders, because PostgreSQL writes numbers its own way: metadata holding
a decimal number (``1.50`` stays ``1.50`` in jsonb, Python writes ``1.5``), and links (a float
confidence). Both are rare, and checked per row. Embeddings are not written here (the caller
uses the object path when they are asked for): float4 text differs from Python's float repr.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from django.db import connection

from banks.models import Bank

_DECIMAL = re.compile(r"[0-9]\.[0-9]")


def _iso(column: str) -> str:
    utc = f"({column} AT TIME ZONE 'UTC')"
    return (f"to_char({utc}, 'YYYY-MM-DD\"T\"HH24:MI:SS') "
            f"|| CASE WHEN date_trunc('second', {column}) <> {column} THEN to_char({utc}, '.US') ELSE '' END "
            "|| '+00:00'")


def _optional(key: str, column: str) -> str:
    return f"CASE WHEN {column} <> '' THEN ', \"{key}\": ' || to_jsonb({column})::text ELSE '' END"


def _time(key: str, column: str) -> str:
    return f"CASE WHEN {column} IS NOT NULL THEN ', \"{key}\": \"' || {_iso(column)} || '\"' ELSE '' END"


# Each table of a row's subqueries names the bank: on a partitioned install a lookup by the memory's id
# alone probes every partition, for every exported row (docs/scaling.md, "Keys that lead with the bank").
def _entities(bank_pk: int) -> str:
    # Vetted: a fixed fragment; the bank id is an int.
    bank = int(bank_pk)
    return (
        "COALESCE((SELECT ', \"entities\": [' || string_agg('{\"name\": ' || to_jsonb(e.name)::text "  # noqa: S608
        "|| ', \"entity_type\": ' || to_jsonb(e.entity_type)::text || ', \"aliases\": ' || to_jsonb(e.aliases)::text "
        "|| '}', ', ' ORDER BY me.id) || ']' FROM banks_memoryentity me JOIN banks_entity e ON e.id = me.entity_id "
        f"AND e.bank_id = {bank} WHERE me.bank_id = {bank} AND me.memory_id = m.id), '')"
    )


def _links(bank_pk: int) -> str:
    # Vetted: a fixed fragment; the bank id is an int.
    bank = int(bank_pk)
    return (
        "(SELECT jsonb_agg(jsonb_build_array(t.memory_id, l.link_type, l.confidence, l.metadata) ORDER BY l.id)::text "  # noqa: S608
        f"FROM banks_memorylink l JOIN banks_memory t ON t.id = l.target_id AND t.bank_id = {bank} "
        f"WHERE l.bank_id = {bank} AND l.source_id = m.id)"
    )


def _select(bank: Bank, *, include_entities: bool, include_archived: bool) -> str:
    head = ("'{\"id\": ' || to_jsonb(m.memory_id)::text || ', \"text\": ' || to_jsonb(m.text)::text || "
            + _optional("fact_type", "m.fact_type")
            + " || CASE WHEN cardinality(m.tags) > 0 THEN ', \"tags\": ' || to_jsonb(m.tags)::text ELSE '' END")
    metadata = "CASE WHEN jsonb_typeof(m.metadata) = 'object' AND m.metadata <> '{}'::jsonb THEN m.metadata::text END"
    tail = " || ".join([_time("occurred_at", "m.occurred_at"), _time("created_at", "m.created_at"),
                        _time("retained_at", "m.retained_at"), _optional("source", "m.source"),
                        _optional("memory_layer", "m.memory_layer")]
                       + ([_entities(bank.pk)] if include_entities else []))
    links = _links(bank.pk) if include_entities else "NULL"
    live = "" if include_archived else " AND m.archived_at IS NULL"
    # Vetted: every interpolated piece is a fixed fragment of this module; the bank id is an int.
    return (f"SELECT {head}, {metadata}, {tail}, {links} FROM banks_memory m "  # noqa: S608
            f"WHERE m.bank_id = {int(bank.pk)} AND m.forgotten_at IS NULL{live} ORDER BY m.id")


def _links_json(raw: str) -> str:
    links = []
    for target_id, link_type, confidence, metadata in json.loads(raw):
        link = {"target_id": target_id, "link_type": link_type, "confidence": float(confidence)}
        if metadata:
            link["metadata"] = metadata
        links.append(link)
    return json.dumps(links, ensure_ascii=False, allow_nan=False, default=str)


def memory_lines(bank: Bank, *, include_entities: bool, include_archived: bool) -> Iterator[str]:
    """Each live memory of ``bank`` as its AMA line (with the newline), in id order.

    Runs in the caller's transaction (the exporter's snapshot) and holds one row at a time.
    """
    sql = _select(bank, include_entities=include_entities, include_archived=include_archived)
    dumps = json.dumps
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY ({sql}) TO STDOUT") as copy:
        copy.set_types(["text", "text", "text", "text"])
        for head, metadata, tail, links in copy.rows():
            if metadata is not None:
                if _DECIMAL.search(metadata):
                    metadata = dumps(json.loads(metadata), ensure_ascii=False, allow_nan=False, default=str)
                head = f'{head}, "metadata": {metadata}'
            if links is not None:
                yield f'{head}{tail}, "links": {_links_json(links)}}}\n'
            else:
                yield f"{head}{tail}}}\n"
