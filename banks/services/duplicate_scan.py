"""Near-duplicate scan of a whole bank, as a job on the worker.

Each batch of memories asks the HNSW index for every member's nearest live neighbours in one
statement (a LATERAL nearest-neighbour subquery per row), keeps the pairs at or above the threshold
and stores them (``DuplicatePair``). Memory stays bounded by the batch; each batch commits on its own.

A scan is incremental when the previous successful scan of the bank used the same or a lower
threshold and the same embedding model: it then looks only at memories added (primary key above the previous scan's watermark)
or changed since the previous scan began. Otherwise, or when asked, it starts over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Max, Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from banks.duplicate_rule import same_fact
from banks.models import Bank, DuplicatePair, Job, JobState, Memory
from banks.providers import bank_embedder
from banks.selectors.neighbours import near_duplicate_threshold
from banks.services.jobs import job_create, job_enqueue, job_is_stale
from banks.vectors import EXACT_ORDER, distance_sql, enable_iterative_scan, vector_scope
from memoryhub.errors import InvalidInput
from memoryhub.queue import send_task

KIND = "duplicates"
BATCH = 200
NEIGHBOURS = 5  # per memory: a cluster bigger than this is still joined through its members' pairs
# Neighbours read per memory before the rule drops look-alikes naming other things, so that a text's
# true duplicates are not crowded out by other people's look-alike facts.
LOOKED_AT = 20
DELETE_CHUNK = 5000
# Which pair rule a scan applied: pairs now need the same names and numbers (banks.duplicate_rule).
RULE = "same-names-numbers-1"


@dataclass
class ScanOutcome:
    scanned: int
    pairs: int
    full: bool
    threshold: float
    through_pk: int
    started_at: datetime
    embedding_model: str = ""

    def result(self) -> dict[str, Any]:
        return {"scanned": self.scanned, "pairs": self.pairs, "full": self.full, "threshold": self.threshold,
                "through_pk": self.through_pk, "started_at": self.started_at.isoformat(),
                "embedding_model": self.embedding_model, "rule": RULE}


def duplicates_scan_start(*, bank: Bank, actor: str, threshold: Any = None, full: bool = False) -> Job:
    """Queue a scan of the bank; while one is queued or running, that one is returned."""
    threshold = _threshold(bank, threshold)
    running = Job.objects.filter(bank=bank, kind=KIND, state__in=[JobState.QUEUED, JobState.RUNNING]).first()
    if running is not None and not job_is_stale(running):
        return running
    job = job_create(kind=KIND, actor=actor, bank=bank, params={"threshold": threshold, "full": bool(full)})
    return job_enqueue(job=job, send=lambda: send_task("banks.find_duplicates", job.pk))


def _threshold(bank: Bank, value: Any) -> float:
    if value in (None, ""):
        return near_duplicate_threshold(bank)
    try:
        threshold = float(value)
    except (TypeError, ValueError):
        raise InvalidInput("must be a number between 0.5 and 1", field="threshold") from None
    if not 0.5 <= threshold <= 1.0:
        raise InvalidInput("must be between 0.5 and 1", field="threshold")
    return round(threshold, 4)


def duplicates_rescan_all(actor: str = "system") -> list[int]:
    """Queue an incremental scan of every bank searched before that has memories added or changed since
    (Celery beat); returns the jobs started."""
    started = []
    for bank in Bank.objects.active().filter(jobs__kind=KIND, jobs__state=JobState.SUCCEEDED).distinct():
        scan = last_scan(bank)
        if scan is None:
            continue
        since = parse_datetime(scan.result.get("started_at", "")) or scan.finished_at
        fresh = Memory.objects.live().filter(bank=bank).filter(
            Q(pk__gt=int(scan.result.get("through_pk", 0))) | Q(updated_at__gte=since))
        if fresh.exists():
            started.append(duplicates_scan_start(bank=bank, actor=actor, threshold=scan.result.get("threshold")).pk)
    return started


def last_scan(bank: Bank) -> Job | None:
    return Job.objects.filter(bank=bank, kind=KIND, state=JobState.SUCCEEDED).order_by("-finished_at", "-pk").first()


def duplicates_scan(*, bank: Bank, threshold: float, full: bool = False,
                    progress: Callable[[int, int], None] | None = None) -> ScanOutcome:
    started = timezone.now()
    previous = last_scan(bank)
    before = previous.result if previous is not None else {}
    model = bank_embedder(bank).name
    # Incremental only on top of a scan as wide (threshold) and of the same vectors: a re-embed
    # changes every similarity without touching updated_at, so it makes the next scan a full one.
    # A scan stored before pairs had to name the same things (``rule``) is not built upon either.
    incremental = (not full and bool(before) and float(before.get("threshold", 2.0)) <= threshold
                   and before.get("embedding_model") == model and before.get("rule") == RULE)
    # The bank's newest primary key (one step down its (bank_id, id) index): its rows above it are new
    # since this scan. Keys come from one sequence, so a row committed later may hold a lower key only
    # if it was inserted before this read, as with the whole table's newest key.
    through_pk = Memory.objects.filter(bank=bank).aggregate(top=Max("pk"))["top"] or 0
    candidates = Memory.objects.live().filter(bank=bank, embedding_dims__isnull=False, pk__lte=through_pk)
    if incremental:
        since = parse_datetime(before.get("started_at", "")) or started
        candidates = candidates.filter(Q(pk__gt=int(before.get("through_pk", 0))) | Q(updated_at__gte=since))
    else:
        _forget_pairs(bank)
    total = candidates.count()
    done = pairs = 0
    last_pk = 0
    while True:
        rows = list(candidates.filter(pk__gt=last_pk).order_by("pk").values_list("pk", "embedding_dims")[:BATCH])
        if not rows:
            break
        last_pk = rows[-1][0]
        by_dims: dict[int, list[int]] = {}
        for pk, dims in rows:
            by_dims.setdefault(int(dims or 0), []).append(pk)
        with transaction.atomic():
            if incremental:
                # A changed memory's old pairs may no longer hold; its scan below finds the current ones.
                batch = [pk for pk, _ in rows]
                DuplicatePair.objects.filter(Q(memory_a_id__in=batch) | Q(memory_b_id__in=batch), bank=bank).delete()
            found: dict[tuple[int, int], float] = {}
            for dims, pks in by_dims.items():
                for a, b, similarity in _nearest_pairs(bank, dims, pks, threshold):
                    key = (min(a, b), max(a, b))
                    found[key] = max(found.get(key, 0.0), similarity)
            created = DuplicatePair.objects.bulk_create(
                [DuplicatePair(bank=bank, memory_a_id=a, memory_b_id=b, similarity=s) for (a, b), s in found.items()],
                ignore_conflicts=True)
            pairs += len(created)
        done += len(rows)
        if progress is not None:
            progress(done, total)
    return ScanOutcome(scanned=done, pairs=pairs, full=not incremental, threshold=threshold, through_pk=through_pk,
                       started_at=started, embedding_model=model)


def _nearest_pairs(bank: Bank, dims: int, pks: list[int], threshold: float) -> list[tuple[int, int, float]]:
    """(memory pk, neighbour pk, similarity) for each memory's nearest live neighbours above ``threshold``
    that state the same fact, leaving out the pairs an operator marked as not duplicates.

    The neighbours come from the bank's HNSW graph. A memory whose walk brought back fewer than LOOKED_AT
    is looked up again exactly, as recall does (banks.vectors.nearest_rows): a bank's rows can sit behind
    many dead or foreign entries of the shared graph, where the walk gives up before it reaches them, and
    a small bank has fewer rows than LOOKED_AT anyway (reading it exactly costs little)."""
    rows = _neighbour_rows(bank, dims, pks, exact=False)
    found: dict[int, int] = {}
    for row in rows:
        found[row[0]] = found.get(row[0], 0) + 1
    short = {pk for pk in pks if found.get(pk, 0) < LOOKED_AT}
    if short:
        rows = [row for row in rows if row[0] not in short] + _neighbour_rows(bank, dims, sorted(short), exact=True)
        rows.sort(key=lambda row: (row[0], -float(row[2])))
    # Look-alikes that name other people, places, amounts or dates are not pairs (banks.duplicate_rule).
    kept: dict[int, int] = {}
    pairs = []
    for a, b, s, dismissed, text_a, text_b in rows:
        if dismissed or float(s) < threshold or kept.get(a, 0) >= NEIGHBOURS or not same_fact(text_a, text_b):
            continue
        kept[a] = kept.get(a, 0) + 1
        pairs.append((a, b, round(float(s), 4)))
    return pairs


def _neighbour_rows(bank: Bank, dims: int, pks: list[int], *, exact: bool) -> list[tuple[Any, ...]]:
    """Each memory's LOOKED_AT nearest live neighbours of its model, best first: (memory pk, neighbour pk,
    similarity, marked as not a duplicate, memory text, neighbour text). ``exact``: compared one by one
    (banks.vectors.EXACT_ORDER, and no index scope named)."""
    distance = distance_sql(dims, column="m.embedding", param="q.embedding")
    scope = "TRUE" if exact else vector_scope(bank.pk, "m")
    # Vetted: {distance} and the dimension are int-cast (distance_sql), {scope} is vector_scope's fixed
    # clause; every value is a parameter.
    sql = (
        "SELECT q.id, n.id, n.similarity, "  # noqa: S608
        "COALESCE(q.metadata->'_not_duplicate_of', '[]'::jsonb) ? n.memory_id, q.text, n.text "
        "FROM banks_memory q CROSS JOIN LATERAL ("
        f"  SELECT m.id, m.memory_id, m.text, 1 - {distance} AS similarity FROM banks_memory m"
        f"  WHERE m.bank_id = %s AND m.embedding_dims = {int(dims)} AND m.embedding_model = q.embedding_model"
        "   AND m.archived_at IS NULL AND m.forgotten_at IS NULL AND m.id <> q.id"
        # The clause that matches the HNSW index holding this bank's rows (shared, or the bank's own).
        f"   AND {scope}"
        f"  ORDER BY {distance}{EXACT_ORDER if exact else ''} LIMIT %s"
        ") n WHERE q.id = ANY(%s) AND q.bank_id = %s ORDER BY q.id, n.similarity DESC"
    )
    with connection.cursor() as cursor:
        if not exact:  # keep walking the shared graph until this bank's neighbours turn up
            enable_iterative_scan(cursor, LOOKED_AT)
        cursor.execute(sql, [bank.pk, LOOKED_AT, pks, bank.pk])
        return list(cursor.fetchall())


def _forget_pairs(bank: Bank) -> None:
    """A full scan starts from nothing: the bank's pairs go, a chunk at a time."""
    while True:
        with transaction.atomic():
            chunk = list(DuplicatePair.objects.filter(bank=bank).values_list("pk", flat=True)[:DELETE_CHUNK])
            if not chunk:
                return
            # The bank named again: by id alone the delete would go to every bank's shard.
            DuplicatePair.objects.filter(bank=bank, pk__in=chunk).delete()


__all__ = ["KIND", "ScanOutcome", "duplicates_rescan_all", "duplicates_scan", "duplicates_scan_start", "last_scan"]
