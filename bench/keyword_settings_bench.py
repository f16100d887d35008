"""The web worker's CPU for the keyword arm's scan settings: in the statement's own message, or in a
transaction of their own (BEGIN, settings, statement, COMMIT), as recall_keyword.postings_query sends
them outside and inside a caller's transaction.

    .venv/bin/python bench/keyword_settings_bench.py                 # 5 rounds each way
    .venv/bin/python bench/keyword_settings_bench.py --rounds 12 --recalls 200

First ``postings_query`` on ``SELECT 1`` against the plain statement (µs of the calling thread's CPU a
call, --calls a round); then whole recalls as bench/web_cpu_bench.py sends them (raw WSGI, hashing
embedder, its bank under var/web-cpu-bench, which that bench makes), the two ways switched in the
same process between interleaved rounds (ms of process CPU a recall). On a shared machine compare
the best rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import web_cpu_bench  # noqa: E402  (sets up Django on var/web-cpu-bench, hashing embedder)

# isort: split

from django.db import connection  # noqa: E402

from banks.selectors import recall_keyword  # noqa: E402
from banks.services.tokens import token_create  # noqa: E402


class _NotClientSide:
    """Stands in for psycopg's ClientCursor: postings_query then takes its transaction path."""


def _ways(switch: Callable[[bool], None], run: Callable[[], Any], rounds: int, count: int,
          clock: Callable[[], float], unit: float) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"own transaction": [], "one message": []}
    for r in range(rounds):
        for way in (("own transaction", "one message") if r % 2 == 0 else ("one message", "own transaction")):
            switch(way == "one message")
            started = clock()
            for _ in range(count):
                run()
            figures[way].append((clock() - started) * unit / count)
    switch(True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--recalls", type=int, default=200)
    args = parser.parse_args()
    client_side = recall_keyword.ClientCursor

    def switch(one_message: bool) -> None:
        recall_keyword.ClientCursor = client_side if one_message else _NotClientSide  # type: ignore[assignment, misc]

    def select_one() -> None:
        with connection.cursor() as cursor:
            recall_keyword.postings_query(cursor, "SELECT 1", [])

    def plain() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchall()

    calls = _ways(switch, select_one, args.rounds, args.calls, time.thread_time, 1e6)
    bare: list[float] = []
    for _ in range(args.rounds):
        started = time.thread_time()
        for _ in range(args.calls):
            plain()
        bare.append((time.thread_time() - started) * 1e6 / args.calls)
    print(f"SELECT 1, µs of CPU a call ({args.rounds} rounds of {args.calls}):")
    print(f"  the plain statement: best {min(bare):.1f}  median {statistics.median(bare):.1f}")
    for way, figures in calls.items():
        print(f"  postings_query, {way}: best {min(figures):.1f}  median {statistics.median(figures):.1f}")
    token = token_create(name=f"keyword-settings-{os.getpid()}", actor="bench",
                         grants=[{"bank": web_cpu_bench.BANK, "permissions": ["read"]}])[1]
    recall = web_cpu_bench.requests(token, 7)["recall"]
    for _ in range(50):
        recall()
    recalls = _ways(switch, recall, args.rounds, args.recalls, time.process_time, 1e3)
    print(f"recall, ms of process CPU a request ({args.rounds} rounds of {args.recalls}):")
    for way, figures in recalls.items():
        print(f"  {way}: best {min(figures):.3f}  median {statistics.median(figures):.3f}  "
              f"({' '.join(f'{f:.2f}' for f in figures)})")


if __name__ == "__main__":
    main()
