"""Counting the frequent lexemes of big banks, for the keyword arm's word weights (see
banks.models.text_statistics for why).

A count is one ``ts_stat`` pass over the bank's live memories, in one transaction: recalls keep
reading the previous count until it commits. The periodic refresh counts a bank again when it has
none, when its size moved by more than ``DRIFT`` since, or when its language changed; between
counts, recall scales each stored frequency by how much the bank grew. A bank that fell below the
threshold loses its statistics (counting its words on each question is cheap again).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from banks.models import Bank, BankLexeme, BankTextStatistics
from banks.models.text_statistics import LEXEME_MIN_DOCUMENTS
from banks.services.locks import try_lock_bank_lexemes
from banks.text_search import bank_language, config_name

logger = logging.getLogger(__name__)

# A bank whose live memories changed by more than this share since its last count is counted again.
DRIFT = 0.2
_LIVE = "archived_at IS NULL AND forgotten_at IS NULL"


def statistics_min_rows() -> int:
    return int(getattr(settings, "MEMORYHUB_LEXEME_STATISTICS_MIN", 20_000))


def bank_lexemes_count(bank: Bank) -> int | None:
    """Count the bank's frequent lexemes now; returns how many were stored (None: a count was running)."""
    config = config_name(bank_language(bank.config))  # one of a fixed set of names: safe inside the text below
    rows_sql = (f"SELECT search_vector FROM banks_memory WHERE bank_id = {int(bank.pk)} AND {_LIVE} "  # noqa: S608
                f"AND search_config = '{config}'::regconfig")
    with transaction.atomic(), connection.cursor() as cursor:
        if not try_lock_bank_lexemes(bank):
            return None
        cursor.execute(f"SELECT count(*) FROM ({rows_sql}) r")  # noqa: S608  (vetted above)
        live_rows = int(cursor.fetchone()[0])
        cursor.execute("DELETE FROM banks_banklexeme WHERE bank_id = %s", [bank.pk])
        cursor.execute("INSERT INTO banks_banklexeme (bank_id, lexeme, documents) "
                       "SELECT %s, word, ndoc FROM ts_stat(%s) WHERE ndoc >= %s", [bank.pk, rows_sql, LEXEME_MIN_DOCUMENTS])
        stored = cursor.rowcount
        BankTextStatistics.objects.update_or_create(
            bank=bank, defaults={"search_config": config, "live_rows": live_rows, "counted_at": timezone.now()})
    logger.info("bank %s: %d frequent lexemes over %d live memories", bank.bank_id, stored, live_rows)
    return stored


def bank_lexemes_forget(bank_pk: int) -> None:
    with transaction.atomic():
        BankLexeme.objects.filter(bank_id=bank_pk).delete()
        BankTextStatistics.objects.filter(bank_id=bank_pk).delete()


def _needs_count(bank: Bank, live_rows: int, stats: BankTextStatistics | None) -> bool:
    if stats is None or stats.search_config != config_name(bank_language(bank.config)):
        return True
    return abs(live_rows - stats.live_rows) > DRIFT * max(stats.live_rows, 1)


def bank_lexemes_refresh_all() -> list[int]:
    """Periodic: count the big banks that need it, forget the statistics of banks no longer big.

    Returns the primary keys of the banks counted."""
    minimum = statistics_min_rows()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT bank_id, count(*) FROM banks_memory WHERE {_LIVE} "  # noqa: S608  (fixed text)
                       "GROUP BY bank_id HAVING count(*) >= %s", [minimum])
        big = {int(pk): int(n) for pk, n in cursor.fetchall()}
    stats = {s.bank_id: s for s in BankTextStatistics.objects.all()}
    for pk in set(stats) - set(big):
        bank_lexemes_forget(pk)
    counted: list[int] = []
    for bank in Bank.objects.filter(pk__in=list(big), deleted_at__isnull=True).order_by("pk"):
        if _needs_count(bank, big[bank.pk], stats.get(bank.pk)) and bank_lexemes_count(bank) is not None:
            counted.append(bank.pk)
    return counted


def bank_lexemes_after_load(bank: Bank) -> bool:
    """After a bulk load: count the bank if it is now big and its count is missing or stale (a
    million-memory import should not wait for the next periodic refresh to be searched quickly)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM banks_memory WHERE bank_id = %s AND {_LIVE}", [bank.pk])  # noqa: S608
        live_rows = int(cursor.fetchone()[0])
    if live_rows < statistics_min_rows():
        return False
    if not _needs_count(bank, live_rows, BankTextStatistics.objects.filter(bank=bank).first()):
        return False
    return bank_lexemes_count(bank) is not None
