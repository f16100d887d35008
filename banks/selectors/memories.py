"""Memory lists for people: filters from the query string, keyset pagination, no unbounded counts."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

from banks.models import Bank, Memory
from banks.selectors.last_change import change_key
from memoryhub.input_rules import parse_time

# Counting stops here; above it a page says "about N" (the planner's estimate, see approximate_count).
COUNT_CAP = 10_000


@dataclass
class MemoryFilters:
    tags: list[str] = field(default_factory=list)
    fact_type: str = ""
    source: str = ""
    layer: str = ""
    state: str = "live"  # live | archived | all
    since: datetime | None = None
    until: datetime | None = None
    entity: str = ""
    text: str = ""

    @classmethod
    def from_query(cls, params: Any) -> MemoryFilters:
        tags = [t.strip() for value in params.getlist("tags") for t in value.split(",") if t.strip()]
        state = params.get("state", "live")
        return cls(tags=tags, fact_type=params.get("fact_type", "").strip(), source=params.get("source", "").strip(),
                   layer=params.get("layer", "").strip(), state=state if state in {"live", "archived", "all"}
                   else "live", since=parse_time(params.get("since") or None),
                   until=parse_time(params.get("until") or None), entity=params.get("entity", "").strip(),
                   text=params.get("contains", "").strip())

    def as_query(self) -> dict[str, str]:
        query = {"tags": ",".join(self.tags), "fact_type": self.fact_type, "source": self.source,
                 "layer": self.layer, "state": "" if self.state == "live" else self.state,
                 "since": self.since.date().isoformat() if self.since else "",
                 "until": self.until.date().isoformat() if self.until else "", "entity": self.entity,
                 "contains": self.text}
        return {k: v for k, v in query.items() if v}


def memory_queryset(bank: Bank, filters: MemoryFilters) -> QuerySet[Memory]:
    rows = Memory.objects.filter(bank=bank, forgotten_at__isnull=True)
    if filters.state == "live":
        rows = rows.filter(archived_at__isnull=True)
    elif filters.state == "archived":
        rows = rows.filter(archived_at__isnull=False)
    if filters.tags:
        rows = rows.filter(tags__overlap=filters.tags)
    if filters.fact_type:
        rows = rows.filter(fact_type=filters.fact_type)
    if filters.source:
        rows = rows.filter(source=filters.source)
    if filters.layer:
        rows = rows.filter(memory_layer=filters.layer)
    if filters.since:
        rows = rows.filter(retained_at__gte=filters.since)
    if filters.until:
        rows = rows.filter(retained_at__lte=filters.until)
    if filters.entity:
        rows = rows.filter(Q(entities__name__iexact=filters.entity) | Q(entities__entity_id=filters.entity))
    if filters.text:
        rows = rows.filter(text__icontains=filters.text)
    return rows


SORTS = {"retained": "retained_at", "occurred": "occurred_at"}


def encode_cursor(memory: Memory, column: str = "retained_at") -> str:
    raw = json.dumps([getattr(memory, column).isoformat(), memory.pk]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int] | None:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        when, pk = json.loads(raw)
        return datetime.fromisoformat(when), int(pk)
    except (ValueError, TypeError):
        return None


@dataclass
class MemoryPage:
    rows: list[Memory]
    next_cursor: str | None  # older rows follow
    prev_cursor: str | None = None  # newer rows precede
    sort: str = "retained"


def memory_page(bank: Bank, filters: MemoryFilters, *, after: str | None = None, before: str | None = None,
                limit: int = 50, sort: str = "retained") -> MemoryPage:
    """Newest first by ``sort`` (retained or occurred), ``limit`` rows after (older than) or before
    (newer than) a cursor, on the (bank, column, id) indexes. Sorting by occurred lists the memories
    that say when they happened."""
    sort = sort if sort in SORTS else "retained"
    column = SORTS[sort]
    rows = memory_queryset(bank, filters).defer("embedding")
    if column == "occurred_at":
        rows = rows.filter(occurred_at__isnull=False)
    newer = decode_cursor(before) if before else None
    older = decode_cursor(after) if after and not newer else None
    if newer:
        when, pk = newer
        chunk = list(rows.filter(Q(**{f"{column}__gt": when}) | Q(**{column: when, "pk__gt": pk}))
                     .order_by(column, "pk")[: limit + 1])
        more_newer = len(chunk) > limit
        page = list(reversed(chunk[:limit]))
        return MemoryPage(rows=page, next_cursor=encode_cursor(page[-1], column) if page else None,
                          prev_cursor=encode_cursor(page[0], column) if more_newer and page else None, sort=sort)
    if older:
        when, pk = older
        rows = rows.filter(Q(**{f"{column}__lt": when}) | Q(**{column: when, "pk__lt": pk}))
    page = list(rows.order_by(f"-{column}", "-pk")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return MemoryPage(rows=page, next_cursor=encode_cursor(page[-1], column) if more and page else None,
                      prev_cursor=encode_cursor(page[0], column) if older and page else None, sort=sort)


def approximate_count(rows: QuerySet[Memory], cap: int | None = None) -> tuple[int, bool]:
    """(n, exact): exact up to ``cap`` (default ``COUNT_CAP``); above it PostgreSQL's own estimate for the
    same query."""
    cap = COUNT_CAP if cap is None else cap
    n, more = bounded_count(rows, cap)
    if not more:
        return n, True
    from django.db import connection

    sql, params = rows.values("pk").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return max(int(plan[0]["Plan"]["Plan Rows"]), cap + 1), False


def bank_memory_count(bank: Bank) -> tuple[int, bool]:
    """(n, exact): the bank's live memories as every page shows them (the banks list, the overview, the
    memory list without filters): exact up to ``COUNT_CAP``, above it the planner's estimate of this one
    query, so all of them say the same "about N"."""
    return approximate_count(memory_queryset(bank, MemoryFilters()))


def memory_facets(bank: Bank, sample: int = 5000) -> dict[str, list[str]]:
    """Fact types, layers and sources in use, read from the latest ``sample`` memories. Cached a minute
    under the bank's latest audited change, as the overview is: a retain or import of a new fact type or
    source shows in the filters at once."""
    from django.core.cache import cache
    from django.db import connection

    key = f"memoryhub:facets:{bank.pk}:{change_key(bank.pk)}"
    facets = cache.get(key)
    if facets is None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT array_agg(DISTINCT fact_type), array_agg(DISTINCT memory_layer) FILTER (WHERE memory_layer "
                "IS NOT NULL), (array_agg(DISTINCT source) FILTER (WHERE source IS NOT NULL))[1:200] FROM "
                "(SELECT fact_type, memory_layer, source FROM banks_memory WHERE bank_id = %s "
                "ORDER BY retained_at DESC LIMIT %s) recent", [bank.pk, sample])
            types, layers, sources = cursor.fetchone()
        facets = {"fact_types": sorted(types or []), "layers": sorted(layers or []), "sources": sorted(sources or [])}
        cache.set(key, facets, 60)
    return facets


def bounded_count(rows: QuerySet[Memory], cap: int = COUNT_CAP) -> tuple[int, bool]:
    """How many rows, up to ``cap``; the flag says the real number is larger."""
    n = rows.values("pk")[: cap + 1].count()
    return min(n, cap), n > cap


def touch_filter(rows: QuerySet[Memory], action: str, tag: str = "") -> QuerySet[Memory]:
    """The part of a selection a bulk action would really change (already-tagged rows are not
    tagged again, only archived rows are restored...), so a preview can say the exact number."""
    rows = rows.filter(forgotten_at__isnull=True)
    if action == "tag" and tag:
        return rows.exclude(tags__contains=[tag])
    if action == "untag" and tag:
        return rows.filter(tags__contains=[tag])
    if action == "archive":
        return rows.filter(archived_at__isnull=True)
    if action == "restore":
        return rows.filter(archived_at__isnull=False)
    return rows


def exact_count(rows: QuerySet[Memory], *, timeout_ms: int = 3000) -> int | None:
    """COUNT(*) under a statement timeout: the exact number, or None when it takes too long."""
    from django.db import OperationalError, connection, transaction

    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL statement_timeout = {int(timeout_ms)}")
            return rows.count()
    except OperationalError:
        return None
