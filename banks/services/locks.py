"""Transaction-level advisory locks that serialise check-then-write sequences per bank."""

from __future__ import annotations

from django.db import connection

from banks.models import Bank

# First key of the two-key advisory lock: which sequence is serialised. The second is the bank.
RETAIN_LOCK = 0x4D48_0001


def lock_bank_for_new_content(bank: Bank) -> None:
    """Hold, until the surrounding transaction ends, the bank's lock for "is this content new? then
    store it". Near-duplicate checks read other rows, which no unique constraint can guard: without the
    lock two similar retains both see nothing similar and both store.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("lock_bank_for_new_content needs a transaction")  # the lock would end at once
    with connection.cursor() as cursor:
        # Both keys are int4; a bank pk past 2**31 folds onto another bank's key, which only serialises more.
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [RETAIN_LOCK, bank.pk % 2_147_483_647])


# Counting a bank's lexemes (banks.services.text_statistics): one count per bank at a time.
LEXEME_LOCK = 0x4D48_0002


def try_lock_bank_lexemes(bank: Bank) -> bool:
    """Take the bank's lexeme-count lock until the surrounding transaction ends; False if another holds it."""
    if not connection.in_atomic_block:
        raise RuntimeError("try_lock_bank_lexemes needs a transaction")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [LEXEME_LOCK, bank.pk % 2_147_483_647])
        return bool(cursor.fetchone()[0])
