"""Operator page times on a big bank: the memory list (first page and a deep page by cursor),
hybrid search, and a memory's detail page, through Django's test client.

    .venv/bin/python bench/curation_bench.py --bank import-bench-1000000 --runs 20

The bank must exist in the bench database (bench/portability_bench.py or bench/recall_bench.py make one).
Those banks name no entities; the bank map and the graph page are timed on a bank of their own, made
through the import path if missing (N memories, each naming three of N/10 entities, a few hubs and a
long tail):

    .venv/bin/python bench/curation_bench.py --graph-bank 21000 --runs 20
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("MEMORYHUB_VAR_DIR", str(REPO / "var" / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# The bench banks are written with the hashing embedder (portability_bench, recall_http_bench); a search
# embedded with another model would find none of their vectors and fall back to scanning the bank.
os.environ.setdefault("MEMORYHUB_EMBEDDINGS", "hashing")

import django  # noqa: E402
from django.conf import settings as _settings  # noqa: E402

from memoryhub.embedded import prepare_local_install  # noqa: E402

prepare_local_install(_settings)  # the local install's folders, key and server, as manage.py does
django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from banks.models import Bank, Memory  # noqa: E402


def timed(client: Client, url: str, runs: int) -> tuple[float, float, int]:
    times, queries = [], 0
    for _ in range(runs):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
        queries = len(captured)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], queries


def slowest(client: Client, url: str, top: int = 3) -> None:
    """The page's slowest statements, with any sequential scan or sort PostgreSQL chose for them."""
    with CaptureQueriesContext(connection) as captured:
        client.get(url)
    for query in sorted(captured.captured_queries, key=lambda q: -float(q["time"]))[:top]:
        sql = query["sql"]
        line = f"      {float(query['time']) * 1000:6.1f} ms  {sql[:150]}"
        if sql.lstrip().upper().startswith("SELECT"):
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN " + sql)
                plan = [r[0].strip() for r in cursor.fetchall()]
            notes = [p for p in plan if "Seq Scan" in p or p.startswith("-> Sort") or "Sort " in p[:8]]
            if notes:
                line += "\n         plan: " + " | ".join(notes[:3])
        print(line)


def graph_bank(memories: int) -> Bank:
    """A bank whose memories name entities, built once through the import path."""
    from banks.services.banks import bank_create
    from portability.records import EntityRecord, MemoryRecord
    from portability.services.importer import archive_import

    bank_id = f"graph-bench-{memories}"
    bank = bank_create(bank_id=bank_id, actor="bench", get_existing=True)
    if Memory.objects.filter(bank=bank).exists():
        return bank
    entities = max(10, memories // 10)
    types = ["PERSON", "ORG", "LOCATION", "PRODUCT", "OTHER"]

    def records():  # noqa: ANN202
        for m in range(memories):
            names = {m % 7, (m * 7) % entities, (m * 13 + 5) % max(1, entities // (1 + m % 4))}
            yield MemoryRecord(memory_id=f"g{m}", text=f"Note {m}: a fact about topic {m % 97}.",
                               entities=[EntityRecord(name=f"Entity {i:05d}", entity_type=types[i % 5])
                                         for i in sorted(names)])

    started = time.perf_counter()
    archive_import(bank=bank, records=records, actor="bench", extract_entities=False)
    print(f"built {bank_id} in {time.perf_counter() - started:.1f} s")
    return bank


def graph_pages(bank: Bank) -> dict[str, str]:
    from banks.models import Entity, MemoryEntity

    top = Entity.objects.filter(bank=bank).order_by("-mention_count", "name").first()
    pages = {"bank map, 50 entities": f"/banks/{bank.bank_id}/map/",
             "bank map, 400 entities": f"/banks/{bank.bank_id}/map/?n=400"}
    if top is not None:
        pages["graph page, top entity"] = f"/banks/{bank.bank_id}/graph/?entity={top.entity_id}"
        # The last page of the top entity's mentions: the cursor is the memory id just above the 50 oldest.
        last = (MemoryEntity.objects.filter(bank=bank, entity=top).order_by("memory_id")
                .values_list("memory_id", flat=True)[50:51].first())
        if last is not None:
            pages["graph page, last mentions"] = (f"/banks/{bank.bank_id}/graph/?entity={top.entity_id}"
                                                  f"&after={last + 1}")
    return pages


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bank")
    parser.add_argument("--graph-bank", type=int, metavar="N",
                        help="time the bank map and the graph page on a bank of N memories naming entities")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--explain", action="store_true", help="print each page's slowest statements and plans")
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = ["testserver"]
    if args.graph_bank:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)  # a fresh bench database, the first time
    user, _ = get_user_model().objects.get_or_create(username="bench-operator", defaults={"is_superuser": True,
                                                                                          "is_staff": True})
    client = Client()
    client.force_login(user)
    if args.graph_bank:
        bank = graph_bank(args.graph_bank)
        print(f"bank {bank.bank_id}: {Memory.objects.filter(bank=bank).count()} memories, {args.runs} runs per page")
        for label, url in graph_pages(bank).items():
            p50, p95, queries = timed(client, url, args.runs)
            print(f"{label:>28}: p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  {queries} queries")
            if args.explain:
                slowest(client, url)
    if not args.bank:
        return
    bank = Bank.objects.get(bank_id=args.bank)
    deep = Memory.objects.filter(bank=bank).order_by("-retained_at", "-pk")[5000:5001].first()
    from banks.selectors.memories import encode_cursor

    sample = Memory.objects.filter(bank=bank).order_by("pk").first()
    assert deep is not None and sample is not None, f"bank {bank.bank_id} holds fewer than 5,001 memories"
    pages = {
        "memory list, first page": f"/banks/{bank.bank_id}/memories/",
        "memory list, 5000 rows deep": f"/banks/{bank.bank_id}/memories/?after={encode_cursor(deep)}",
        "memory list, tag filter": f"/banks/{bank.bank_id}/memories/?tags=t7",
        "hybrid search": f"/banks/{bank.bank_id}/memories/?q=memory+about+topic+42",
        "memory detail": f"/banks/{bank.bank_id}/memories/{sample.memory_id}/",
        "bank overview": f"/banks/{bank.bank_id}/",
        "time travel": f"/banks/{bank.bank_id}/time/?q=memory+about+topic+42",
        "audit log (bank)": f"/audit/?bank={bank.bank_id}",
        "near-duplicate review": f"/banks/{bank.bank_id}/duplicates/",
    }
    from banks.models import AuditEvent

    deep_event = AuditEvent.objects.filter(bank_ref=bank.bank_id).order_by("-created_at", "-id")[5000:5001].first()
    if deep_event is not None:
        pages["audit log, 5000 events deep"] = f"/audit/?bank={bank.bank_id}&before={deep_event.pk}"
    total = Memory.objects.filter(bank=bank).count()
    print(f"bank {bank.bank_id}: {total} memories, {args.runs} runs per page")
    for label, url in pages.items():
        p50, p95, queries = timed(client, url, args.runs)
        print(f"{label:>28}: p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  {queries} queries")
        if args.explain:
            slowest(client, url)


if __name__ == "__main__":
    main()
