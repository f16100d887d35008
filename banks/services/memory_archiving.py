"""Archiving memories (out of recall, kept, restorable) and bringing them back.

The rows' owner (banks.services.memory_rows) changes them and records each in one audit event; a
restore brings content back to life, so it takes the bank's new-content lock and a live memory with the
same text keeps the archived copy archived."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from banks.models import Bank, Memory
from banks.services.locks import lock_bank_for_new_content
from banks.services.memory_rows import rows_archive, rows_restore
from memoryhub.errors import Conflict, violated_constraint


def memories_archive(*, bank: Bank, memory_ids: list[str], actor: str, reason: str = "") -> list[str]:
    """Archive the live ones among ``memory_ids``; returns those archived (one audit event, written by
    the rows' owner)."""
    with transaction.atomic():
        return rows_archive(bank, memory_ids=memory_ids, actor=actor, reason=reason)


def memories_restore(*, bank: Bank, memory_ids: list[str], actor: str, reason: str = "") -> tuple[list[str], list[str]]:
    """Restore archived memories unless a live one already holds the same content (of two archived
    copies of one text, the older comes back). Returns (restored ids, ids left archived because of a
    clash). Three queries and one audit event, whatever the number of ids."""
    restored: list[str] = []
    clashing: list[str] = []
    now = timezone.now()
    try:
        with transaction.atomic():
            # Restoring brings content back to life, as a retain does: same lock, same check.
            lock_bank_for_new_content(bank)
            rows = list(Memory.objects.filter(bank=bank, memory_id__in=memory_ids, archived_at__isnull=False,
                                              forgotten_at__isnull=True)
                        .order_by("pk").values_list("pk", "memory_id", "content_hash"))
            taken = set(Memory.objects.live().filter(bank=bank, content_hash__in={h for _, _, h in rows})
                        .values_list("content_hash", flat=True))
            pks: list[int] = []
            for pk, memory_id, digest in rows:
                if digest in taken:
                    clashing.append(memory_id)
                    continue
                taken.add(digest)
                pks.append(pk)
                restored.append(memory_id)
            if pks:
                # The owner records the restore (one event naming the rows that came back).
                restored = rows_restore(bank, pks, now, actor=actor, reason=reason)
    except IntegrityError as exc:
        if violated_constraint(exc) == "memory_content_unique_per_bank":
            # An import (which takes no bank lock) stored the same content meanwhile.
            raise Conflict("A live memory took the same content while restoring; nothing was restored",
                           constraint="memory_content_unique_per_bank") from None
        raise
    return restored, clashing


def memory_archive(*, memory: Memory, actor: str, reason: str = "") -> Memory:
    memories_archive(bank=memory.bank, memory_ids=[memory.memory_id], actor=actor, reason=reason)
    memory.refresh_from_db()
    return memory


def memory_restore(*, memory: Memory, actor: str, reason: str = "") -> Memory:
    if memory.archived_at is None:
        return memory
    _, clashing = memories_restore(bank=memory.bank, memory_ids=[memory.memory_id], actor=actor, reason=reason)
    if clashing:
        clash = (Memory.objects.live().filter(bank_id=memory.bank_id, content_hash=memory.content_hash)
                 .values_list("memory_id", flat=True).first())
        raise Conflict(f"Cannot restore: memory '{clash}' already holds the same content", duplicate_of=clash)
    memory.refresh_from_db()
    return memory
