"""The database's CPU per statement of /v1/recall and /v1/retain, as the load bench sends them.

    .venv/bin/python bench/statement_cpu.py                    # 200 requests, 70 % recall
    .venv/bin/python bench/statement_cpu.py --requests 400 --seed 7

Runs in one process on the load bench's bank (var/load-bench, made by bench/load_bench.py, which
must have run once) through Django's test client with a bearer token. The web process's connection
runs with ``log_statement_stats`` and receives each statement's resource use as a notice: the
backend's own user + system CPU for parsing, planning and running it, the figure the load bench's
"database" share adds up. Statements are grouped by their first 90 characters; a transaction's
COMMIT and the driver's BEGIN are counted on lines of their own, and the keyword arm's scan settings
sent in a statement's own message are left out of its key (one notice covers the message). The
semantic arm's walk runs on the helper thread's connection (memoryhub/read_beside.py) and is not in
these figures. The memories it retains are
removed at the end.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("MEMORYHUB_VAR_DIR", str(REPO / "var" / "load-bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402
from django.conf import settings  # noqa: E402

from memoryhub.embedded import prepare_local_install  # noqa: E402

prepare_local_install(settings)
django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from banks.models import Bank, Memory  # noqa: E402
from banks.selectors.recall_keyword import SCANS_OFF_PREFIX  # noqa: E402
from banks.services.memory_rows import rows_delete  # noqa: E402
from banks.services.tokens import token_create, token_revoke  # noqa: E402
from bench.load_bench import WORDS, sentence  # noqa: E402

_STATS = re.compile(r"!\s+([\d.]+) s user, ([\d.]+) s system")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--recall-share", type=float, default=0.7)
    parser.add_argument("--bank", default="load-3000")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--floor", type=float, default=0.02, help="leave out statements below this many ms a request")
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = ["*"]
    bank = Bank.objects.get(bank_id=args.bank)
    token, raw = token_create(name=f"statement-cpu-{uuid.uuid4().hex[:6]}", actor="bench",
                              grants=[{"bank": bank.bank_id, "permissions": ["read", "write"]}])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    now: dict[str, Any] = {"op": None, "sql": None, "pending": None}
    cpu: defaultdict[tuple[str, str], float] = defaultdict(float)
    calls: Counter[tuple[str, str]] = Counter()

    def tally(sql: str, seconds: float) -> None:
        key = (now["op"], re.sub(r"\s+", " ", sql.removeprefix(SCANS_OFF_PREFIX)).strip()[:90])
        cpu[key] += seconds
        calls[key] += 1

    def on_notice(diag: Any) -> None:
        found = _STATS.search(diag.message_detail or "")
        if found and now["sql"]:
            seconds = float(found.group(1)) + float(found.group(2))
            if now["pending"] is not None:
                now["pending"].append(seconds)
            else:
                tally(now["sql"], seconds)

    def remember(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        # The driver opens a transaction with a BEGIN of its own just before the transaction's first
        # statement: two notices during one execute are that BEGIN and the statement. A notice after
        # the statement returned and before the next one is the transaction's COMMIT (or ROLLBACK).
        now["sql"], now["pending"] = sql, []
        try:
            return execute(sql, params, many, context)
        finally:
            seen, now["pending"] = now["pending"], None
            if len(seen) > 1:
                tally("BEGIN (the driver's, before the next statement)", sum(seen[:-1]))
            if seen:
                tally(sql, seen[-1])
            now["sql"] = "COMMIT or ROLLBACK (after the statement before it)"

    connection.ensure_connection()
    connection.connection.add_notice_handler(on_notice)
    with connection.cursor() as cursor:
        cursor.execute("SET client_min_messages = log")
        cursor.execute("SET log_statement_stats = on")
    rng = random.Random(args.seed)
    served: Counter[str] = Counter()
    written: list[str] = []
    try:
        with connection.execute_wrapper(remember):
            for _ in range(args.requests):
                if rng.random() < args.recall_share:
                    now["op"] = "recall"
                    body = {"query": " ".join(rng.sample(WORDS, 3)), "bank_id": bank.bank_id, "max_results": 10}
                else:
                    now["op"] = "retain"
                    body = {"content": f"{sentence(rng)} Also {' '.join(rng.sample(WORDS, 8))} "
                                       f"[statement-cpu {uuid.uuid4().hex[:12]}]",
                            "bank_id": bank.bank_id, "tags": ["load"]}
                response = client.post(f"/v1/{now['op']}", body, content_type="application/json")
                if response.status_code != 200:
                    raise SystemExit(f"{now['op']}: {response.status_code} {response.content[:300]!r}")
                served[now["op"]] += 1
                if now["op"] == "retain":
                    written.append(response.json()["memory_id"])
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET log_statement_stats = off")
        now["sql"] = None
        mine = Memory.objects.filter(bank=bank, memory_id__in=written).values_list("pk", flat=True)
        rows_delete(bank, list(mine), actor="bench", reason="written by bench/statement_cpu.py")
        token_revoke(token=token, actor="bench")
    for op in ("recall", "retain"):
        n = max(served[op], 1)
        total = sum(v for (o, _), v in cpu.items() if o == op)
        print(f"{op}: {served[op]} requests, {total * 1000 / n:.2f} ms of the database's CPU each "
              "(the connection's statements; ms per request, statements per request)")
        for (o, key), v in sorted(cpu.items(), key=lambda kv: -kv[1]):
            if o == op and v * 1000 / n >= args.floor:
                print(f"  {v * 1000 / n:6.3f}  {calls[(o, key)] / n:4.1f}  {key}")


if __name__ == "__main__":
    main()
