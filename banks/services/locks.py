"""Advisory locks that serialise work per bank, and the one list of their key classes.

Every two-key advisory lock is (class, bank): the classes below are the only ones in use, kept in one
place because two sequences that picked the same class would wait on each other (a retain once waited
out the whole build of its bank's own index, minutes at a million memories).
"""

from __future__ import annotations

from django.db import connection

from banks.models import Bank

# First key of the two-key advisory lock: which sequence is serialised. The second is the bank.
RETAIN_LOCK = 0x4D48_0001
# Counting a bank's lexemes (banks.services.text_statistics): one count per bank at a time.
LEXEME_LOCK = 0x4D48_0002
# A bank's own vector indexes (banks.services.vector_indexes): two builds never race.
VECTOR_INDEX_LOCK = 0x4D48_0003
# A bulk load into a bank, held shared for the load (the periodic repair never builds under one).
BANK_LOAD_LOCK = 0x4D48_0004
# Choosing and building a bank's tag indexes (banks.services.tag_indexes): one refresh per bank at a time.
TAG_INDEX_LOCK = 0x4D48_0005
LOCK_CLASSES = (RETAIN_LOCK, LEXEME_LOCK, VECTOR_INDEX_LOCK, BANK_LOAD_LOCK, TAG_INDEX_LOCK)


def bank_lock_key(bank_pk: int) -> int:
    """The bank's second key: both keys are int4, and a pk past 2**31 folds onto another bank's key,
    which only serialises more."""
    return bank_pk % 2_147_483_647


def lock_bank_for_new_content(bank: Bank) -> None:
    """Hold, until the surrounding transaction ends, the bank's lock for "is this content new? then
    store it". Near-duplicate checks read other rows, which no unique constraint can guard: without the
    lock two similar retains both see nothing similar and both store.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("lock_bank_for_new_content needs a transaction")  # the lock would end at once
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [RETAIN_LOCK, bank_lock_key(bank.pk)])



def try_lock_bank_lexemes(bank: Bank) -> bool:
    """Take the bank's lexeme-count lock until the surrounding transaction ends; False if another holds it."""
    if not connection.in_atomic_block:
        raise RuntimeError("try_lock_bank_lexemes needs a transaction")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [LEXEME_LOCK, bank_lock_key(bank.pk)])
        return bool(cursor.fetchone()[0])
