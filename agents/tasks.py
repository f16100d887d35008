from __future__ import annotations

from celery import shared_task


@shared_task(name="agents.ingest_turn")
def ingest_turn_task(bank_pk: int, user_message: str, assistant_message: str, actor: str, turn_id: str,
                     session_id: str = "") -> None:
    from agents.services.ingest import ingest_turn
    from banks.models import Bank

    bank = Bank.objects.filter(pk=bank_pk, deleted_at__isnull=True).first()
    if bank is not None:
        ingest_turn(bank=bank, user_message=user_message, assistant_message=assistant_message, actor=actor,
                    turn_id=turn_id, session_id=session_id)
