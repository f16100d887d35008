"""Numbers for the operator screens, each bounded so a million-memory bank stays fast."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.db.models import Count
from django.utils import timezone

from banks.live.trends import compute_trend
from banks.models import AuditEvent, Bank, Job, MentalModel, Observation
from banks.selectors.last_change import change_key, last_changes
from banks.selectors.memories import bank_memory_count

MIX_SAMPLE = 20_000


def retained_per_day(bank_ids: list[int], days: int = 14) -> dict[int, list[int]]:
    since = (timezone.now() - timedelta(days=days - 1)).date()
    series = {pk: [0] * days for pk in bank_ids}
    if not bank_ids:
        return series
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT bank_id, (retained_at AT TIME ZONE 'UTC')::date AS day, count(*) FROM banks_memory "
            "WHERE bank_id = ANY(%s) AND retained_at >= %s GROUP BY 1, 2", [bank_ids, since])
        for bank_id, day, n in cursor.fetchall():
            index = (day - since).days
            if 0 <= index < days:
                series[bank_id][index] = n
    return series


def bank_cards(banks: list[Bank]) -> list[dict]:
    ids = [b.pk for b in banks]
    spark = retained_per_day(ids)
    observations = dict(Observation.objects.live().filter(bank_id__in=ids).values("bank_id")
                        .annotate(n=Count("pk")).values_list("bank_id", "n"))
    models = dict(MentalModel.objects.live().models_only().filter(bank_id__in=ids).values("bank_id")
                  .annotate(n=Count("pk")).values_list("bank_id", "n"))
    directives = dict(MentalModel.objects.live().directives().filter(bank_id__in=ids).values("bank_id")
                      .annotate(n=Count("pk")).values_list("bank_id", "n"))
    latest_change = last_changes(ids)
    cards = []
    for bank in banks:
        count, exact = bank_memory_count(bank)
        cards.append({"bank": bank, "memories": count, "exact": exact, "observations": observations.get(bank.pk, 0),
                      "models": models.get(bank.pk, 0), "directives": directives.get(bank.pk, 0),
                      "spark": spark[bank.pk],
                      "last_activity": max((t for t in (bank.last_activity_at, latest_change.get(bank.pk)) if t),
                                           default=None)})
    return cards


def occurred_per_day(bank: Bank, days: int = 30) -> tuple[list, list[int]]:
    """When things happened (occurred_at), over the ``days`` up to the latest occurrence among the
    bank's most recent memories: an imported history shows its own dates, not an empty last month."""
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH recent AS (SELECT occurred_at FROM banks_memory WHERE bank_id = %s AND archived_at IS NULL "
            "AND forgotten_at IS NULL ORDER BY retained_at DESC LIMIT %s), "
            "days AS (SELECT (occurred_at AT TIME ZONE 'UTC')::date AS day FROM recent WHERE occurred_at IS NOT NULL) "
            "SELECT day, count(*) FROM days WHERE day > (SELECT max(day) FROM days) - %s GROUP BY day",
            [bank.pk, MIX_SAMPLE, days])
        rows = dict(cursor.fetchall())
    if not rows:
        return [], []
    end = max(rows)
    series = [end - timedelta(days=days - 1 - i) for i in range(days)]
    return series, [rows.get(d, 0) for d in series]


OVERVIEW_CACHE_SECONDS = 60


def bank_overview(bank: Bank) -> dict:
    """The overview's numbers; the heavy ones are cached for a minute so a big bank's page stays quick.

    The cache is keyed on the bank's latest audited change (one index probe): every write is audited, so
    an operator's own retain, edit, import or bulk action shows at once, not a minute later."""
    from django.core.cache import cache

    key = f"memoryhub:overview:{bank.pk}:{change_key(bank.pk)}"
    heavy = cache.get(key)
    if heavy is None:
        heavy = _overview_numbers(bank)
        cache.set(key, heavy, OVERVIEW_CACHE_SECONDS)
    return {
        **heavy,
        "recent_events": AuditEvent.objects.filter(bank=bank).order_by("-created_at")[:10],
        "jobs": Job.objects.filter(bank=bank).exclude(state__in=Job.FINISHED).order_by("-created_at")[:5],
        "observations": Observation.objects.live().filter(bank=bank).count(),
        "models": MentalModel.objects.live().models_only().filter(bank=bank).count(),
        "directives": MentalModel.objects.live().directives().filter(bank=bank).count(),
    }


def _overview_numbers(bank: Bank) -> dict:
    total, exact = bank_memory_count(bank)
    # On a big bank the mix is measured on the latest memories: a fair picture, at a bounded cost.
    types: dict[str, int] = {}
    layers: dict[str | None, int] = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT fact_type, memory_layer, count(*) FROM (SELECT fact_type, memory_layer FROM banks_memory "
            "WHERE bank_id = %s AND archived_at IS NULL AND forgotten_at IS NULL ORDER BY retained_at DESC "
            "LIMIT %s) latest GROUP BY 1, 2", [bank.pk, MIX_SAMPLE])
        for fact_type, layer, n in cursor.fetchall():
            types[fact_type] = types.get(fact_type, 0) + n
            layers[layer] = layers.get(layer, 0) + n
    by_type = [{"fact_type": k, "n": v} for k, v in sorted(types.items(), key=lambda kv: -kv[1])]
    by_layer = [{"memory_layer": k, "n": v} for k, v in sorted(layers.items(), key=lambda kv: -kv[1])]
    with connection.cursor() as cursor:
        # The most recent 5000 memories are a fair sample for "top tags" on any bank size.
        cursor.execute(
            "SELECT tag, count(*) FROM (SELECT tags FROM banks_memory WHERE bank_id = %s AND archived_at IS NULL "
            "AND forgotten_at IS NULL ORDER BY retained_at DESC LIMIT 5000) recent, unnest(recent.tags) AS tag "
            "GROUP BY tag ORDER BY count(*) DESC, tag LIMIT 15", [bank.pk])
        top_tags = cursor.fetchall()
        cursor.execute(
            "SELECT e.name, e.entity_type, e.mention_count FROM banks_entity e WHERE e.bank_id = %s "
            "ORDER BY e.mention_count DESC, e.name LIMIT 10", [bank.pk])
        top_entities = cursor.fetchall()
    trends: dict[str, int] = {}
    for observation in Observation.objects.live().filter(bank=bank).prefetch_related("evidence")[:2000]:
        trend = compute_trend([e.evidence_at for e in observation.evidence.all()] or [observation.updated_at])
        trends[trend] = trends.get(trend, 0) + 1
    per_day = retained_per_day([bank.pk], days=30)[bank.pk]
    occurred_days, occurred = occurred_per_day(bank, days=30)
    return {
        "occurred_days": occurred_days, "occurred_per_day": occurred,
        "total": total, "total_exact": exact, "mix_sampled": total >= MIX_SAMPLE, "mix_sample": MIX_SAMPLE,
        "by_type": by_type, "by_layer": by_layer, "top_tags": top_tags,
        "top_entities": top_entities, "trends": trends, "per_day": per_day,
    }
