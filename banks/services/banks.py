"""Banks: create, update, delete (guarded). Bank ids follow Astrocyte's rule."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from banks.access import Principal, authorize
from banks.models import Bank, BankMembership, Job
from banks.providers.embeddings import Embedder, embedder_spec
from banks.services.audit import audit_record
from banks.services.bank_removal import bank_hide, bank_removal_start, bank_remove_rows, sync_limit
from banks.services.context_rebuild import contexts_rebuild_start
from banks.services.holds import ensure_not_held
from banks.services.text_search import search_language_apply
from banks.text_search import bank_language, check_language
from banks.turn_context import check_context_turns, context_turns
from memoryhub.errors import Conflict, InvalidInput, violated_constraint
from memoryhub.input_rules import check_bank_id, check_storable

_EDITABLE = ("name", "description", "embedding_provider", "dedup_threshold", "config")


def _validate_bank_id(bank_id: str) -> None:
    if not isinstance(bank_id, str):
        raise InvalidInput("must be a string", field="bank_id")
    check_bank_id(bank_id)


def bank_create(
    *,
    bank_id: str,
    actor: str,
    name: str = "",
    description: str = "",
    config: dict[str, Any] | None = None,
    get_existing: bool = False,
    owner: Any = None,
) -> Bank:
    _validate_bank_id(bank_id)
    check_storable({"name": name, "description": description, "config": config or {}})
    check_language(config or {})
    check_recall_switches(config or {})
    existing = Bank.objects.filter(bank_id=bank_id).first()
    if existing is not None:
        if existing.deleted_at is None and get_existing:
            return existing
        if existing.deleted_at is not None:
            raise Conflict(f"Bank '{bank_id}' is being deleted; create it again once its deletion has finished")
        raise Conflict(f"Bank '{bank_id}' already exists")
    try:
        with transaction.atomic():
            bank = Bank.objects.create(bank_id=bank_id, name=name, description=description, config=config or {})
            if owner is not None and not getattr(owner, "is_superuser", False):
                BankMembership.objects.create(user=owner, bank=bank, role="admin")
            audit_record(actor=actor, action="bank.create", bank=bank, target_ids=[bank_id])
    except IntegrityError as exc:
        if violated_constraint(exc) != "banks_bank_bank_id_key":
            raise
        # Two callers created the same bank at once; the winner's row is the bank.
        bank = Bank.objects.get(bank_id=bank_id)
        if not get_existing:
            raise Conflict(f"Bank '{bank_id}' already exists") from None
    return bank


def check_recall_switches(config: dict[str, Any]) -> None:
    """A recall switch the bank sets (``config["recall"]["include_directives"]``) must be true or false:
    a typo would otherwise silently keep the default."""
    recall = config.get("recall")
    for switch in ("include_directives", "multi_hop"):
        if isinstance(recall, dict) and switch in recall and not isinstance(recall[switch], bool):
            raise InvalidInput("must be true or false", field=f"config.recall.{switch}")
    problem = check_context_turns(config)  # the conversation-context window (banks.turn_context)
    if problem:
        raise InvalidInput(problem, field="config.recall.context_turns")


def bank_update(*, bank: Bank, actor: str, by: Principal | None = None, **changes: Any) -> Bank:
    authorize(by, bank.bank_id, "admin")  # bank settings are an admin matter on every surface
    unknown = set(changes) - set(_EDITABLE)
    if unknown:
        raise InvalidInput(f"cannot be changed (editable: {', '.join(_EDITABLE)})", field=sorted(unknown)[0])
    check_storable({k: v for k, v in changes.items() if k != "dedup_threshold"})
    threshold = changes.get("dedup_threshold")
    if threshold is not None and not 0.0 < float(threshold) <= 1.0:
        raise InvalidInput("must be in (0, 1]", field="dedup_threshold")
    if "config" in changes and changes["config"] is not None:
        if not isinstance(changes["config"], dict):
            raise InvalidInput("must be an object", field="config")
        check_language(changes["config"])
        check_recall_switches(changes["config"])
    language_before = bank_language(bank.config)
    turns_before = context_turns(bank.config)
    updated = [k for k, v in changes.items() if v is not None and getattr(bank, k) != v]
    for key in updated:
        setattr(bank, key, changes[key])
    if updated:
        with transaction.atomic():
            bank.save(update_fields=[*updated, "updated_at"])
            details: dict[str, Any] = {"fields": updated}
            if bank_language(bank.config) != language_before:
                details["language"] = {"from": language_before, "to": bank_language(bank.config)}
            audit_record(actor=actor, action="bank.update", bank=bank, target_ids=[bank.bank_id], details=details)
            if "language" in details:
                # Rows indexed in the old language are re-computed (a job for a large bank).
                search_language_apply(bank=bank, actor=actor)
            if context_turns(bank.config) != turns_before:
                # Stored turns' contexts follow the new window (a job: every conversation row of the bank).
                contexts_rebuild_start(bank=bank, actor=actor)
    return bank


def bank_delete(*, bank: Bank, actor: str, confirm: str, reason: str = "", mode: str = "auto",
                by: Principal | None = None) -> Job | None:
    """Delete a bank and everything in it (``admin``). ``confirm`` must repeat the bank id.

    The bank disappears at once for every client. A bank of at most ``sync_limit()`` memories is
    removed before this returns (None); a bigger one by a job on the worker, which is returned (see
    banks.services.bank_removal). ``mode`` "async" always starts a job, "now" never does (scripts).
    """
    authorize(by, bank.bank_id, "admin")
    if mode not in ("auto", "async", "now"):
        raise InvalidInput("must be auto, async or now", field="mode")
    if confirm != bank.bank_id:
        raise InvalidInput(f"must repeat the bank id '{bank.bank_id}' to delete it", field="confirm")
    ensure_not_held(bank)
    count = bank.memories.count()
    bank_hide(bank)
    if mode == "async" or (mode == "auto" and count > sync_limit()):
        return bank_removal_start(bank=bank, actor=actor, reason=reason, memory_count=count)
    bank_remove_rows(bank=bank, actor=actor, reason=reason)
    return None


def bank_embedder_pin(bank: Bank, embedder: Embedder) -> None:
    """Pin an unpinned bank to the model its first memories are embedded with.

    An unpinned bank follows the server's default model. If that default changed after the bank
    had vectors, every recall would find none of them, and the exact fallback would scan the whole
    bank to find nothing. Called by the first writes (retain, import); a pinned bank is left alone,
    and moving a bank to another model is the re-embed job.
    """
    if bank.embedding_provider:
        return
    spec = embedder_spec(embedder)
    if spec and Bank.objects.filter(pk=bank.pk, embedding_provider="").update(embedding_provider=spec):
        bank.embedding_provider = spec

