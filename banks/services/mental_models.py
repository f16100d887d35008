"""Mental models: structured documents with append-only revisions.

Invariants:
* every change appends a MentalModelRevision and bumps ``MentalModel.revision``
  through a compare-and-swap, so two editors never overwrite each other (a stale
  ``expected_revision`` is a 409);
* ``content`` is always the rendering of ``structured_doc``: refresh parses the new
  markdown into structure, delta operations re-render it — the two never diverge;
* delete is soft; re-creating a deleted id continues its revision history.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from banks.access import Principal, authorize
from banks.live.deltas import DeltaResult, DeltaSchemaError, StaleBlockError, apply_delta_ops
from banks.live.structured_doc import (
    StructuredDocError,
    StructuredDocument,
    carry_block_ids,
    doc_from_sections,
    ensure_block_ids,
    load_document,
    parse_markdown,
    render_markdown,
    slugify_heading,
)
from banks.models import Bank, MentalModel, MentalModelRevision
from banks.services.audit import audit_record
from memoryhub.errors import Conflict, InvalidInput, NotFound, violated_constraint
from memoryhub.input_rules import check_count, check_text


def _document(content: str | None, sections: list[dict[str, Any]] | None,
              structured_doc: dict[str, Any] | None) -> StructuredDocument:
    try:
        if structured_doc is not None:
            return load_document(structured_doc, submitted=True)
        if sections is not None:
            return doc_from_sections(sections)
    except StructuredDocError as exc:
        raise InvalidInput(str(exc), field="sections" if sections is not None else "structured_doc",
                           prefix=False) from None
    if content is None:
        raise InvalidInput("one of content, sections or structured_doc is required", field="content")
    if not isinstance(content, str):
        raise InvalidInput("must be a string", field="content")
    return parse_markdown(check_text(content, "content"))


def mental_model_id_for(title: str) -> str:
    """The id of a model created by name only (the seed documentation's ``create_mental_model(name=...)``):
    the same name names the same model, so creating it again makes a new revision."""
    return "model:" + slugify_heading(title if isinstance(title, str) else "")[:200]


def model_document(model: MentalModel) -> StructuredDocument:
    """The model's current document, every block with its id (see ``load_document``)."""
    if model.structured_doc:
        return load_document(model.structured_doc)
    return ensure_block_ids(parse_markdown(model.content), legacy=True)


def _clean_ids(source_ids: Any) -> list[str]:
    if source_ids is None:
        return []
    if not isinstance(source_ids, list) or not all(isinstance(s, str) for s in source_ids):
        raise InvalidInput("must be a list of strings", field="source_ids")
    return list(dict.fromkeys(source_ids))


def mental_model_get(*, bank: Bank, model_id: str, include_deleted: bool = False,
                     kind: str | None = None) -> MentalModel:
    models = MentalModel.objects.filter(bank=bank, model_id=model_id)
    if not include_deleted:
        models = models.filter(deleted_at__isnull=True)
    if kind is not None:
        models = models.filter(kind=kind)
    model = models.first()
    if model is None:
        raise NotFound("directive not found" if kind == MentalModel.Kind.DIRECTIVE else "mental model not found")
    return model


def mental_model_save_revision(
    *, model: MentalModel, doc: StructuredDocument, actor: str, action: str, expected_revision: int | None,
    title: str | None = None, scope: str | None = None, source_ids: list[str] | None = None,
    operations: list[dict[str, Any]] | None = None, change_summary: dict[str, Any] | None = None,
    undelete: bool = False, content: str | None = None,
) -> MentalModel:
    """Append a revision and move the model to it, if nobody moved it first.

    ``content`` is the text a client sent, kept exactly as sent (Astrocyte clients read back what
    they stored); without it the content is rendered from the structured document.
    """
    now = timezone.now()
    ensure_block_ids(doc)
    content = content if content is not None else render_markdown(doc)
    expected = model.revision if expected_revision is None else expected_revision
    changes: dict[str, Any] = {
        "revision": F("revision") + 1, "content": content, "structured_doc": doc.model_dump(mode="json"),
        "refreshed_at": now,
    }
    if title is not None:
        changes["title"] = title
    if scope is not None:
        changes["scope"] = scope
    if source_ids is not None:
        changes["source_ids"] = source_ids
    if undelete:
        changes["deleted_at"] = None
    with transaction.atomic():
        moved = MentalModel.objects.filter(bank_id=model.bank_id, pk=model.pk, revision=expected).update(**changes)
        if moved != 1:
            current = MentalModel.objects.filter(bank_id=model.bank_id, pk=model.pk).values_list(
                "revision", flat=True).first()
            raise Conflict(f"mental model '{model.model_id}' is at revision {current}, not {expected}; "
                           "reload it and apply the change again", current_revision=current)
        model.refresh_from_db()
        MentalModelRevision.objects.create(
            bank_id=model.bank_id, model=model, number=model.revision, title=model.title, scope=model.scope, content=content,
            structured_doc=model.structured_doc, source_ids=list(model.source_ids), operations=operations,
            change_summary=change_summary, action=action, author=actor,
        )
        audit_record(actor=actor, action=f"{'directive' if model.kind == 'directive' else 'mental_model'}.{action}",
                     bank=model.bank, target_ids=[model.model_id], details={"revision": model.revision})
    return model


def mental_model_create(
    *, bank: Bank, model_id: str, title: str, actor: str, content: str | None = None,
    sections: list[dict[str, Any]] | None = None, structured_doc: dict[str, Any] | None = None,
    scope: str = "bank", source_ids: list[str] | None = None, kind: str = MentalModel.Kind.GENERAL,
    by: Principal | None = None,
) -> MentalModel:
    """Create, or (as Astrocyte does) replace an existing model's document as a new revision."""
    authorize(by, bank.bank_id, "write")
    if not model_id or len(model_id) > 255:
        raise InvalidInput("must be 1-255 characters", field="model_id")
    if not isinstance(title, str) or not title.strip():
        raise InvalidInput("Field required", field="title")
    check_text(title, "title")
    check_text(model_id, "model_id")
    doc = _document(content, sections, structured_doc)
    as_sent = content if sections is None and structured_doc is None else None
    ids = _clean_ids(source_ids)
    existing = MentalModel.objects.filter(bank=bank, model_id=model_id).first()
    if existing is not None:
        carry_block_ids(model_document(existing), doc)
        return mental_model_save_revision(
            model=existing, doc=doc, actor=actor, action="replace", expected_revision=existing.revision,
            title=title.strip(), scope=scope or "bank", source_ids=ids, undelete=True, content=as_sent,
        )
    try:
        with transaction.atomic():
            model = MentalModel.objects.create(
                bank=bank, model_id=model_id, kind=kind, title=title.strip(), scope=scope or "bank",
                source_ids=ids, revision=0, refreshed_at=timezone.now(),
            )
            return mental_model_save_revision(model=model, doc=doc, actor=actor, action="create",
                                              expected_revision=0, content=as_sent)
    except IntegrityError as exc:
        if violated_constraint(exc) not in {"mental_model_unique_per_bank", "revision_number_unique"}:
            raise
        raise Conflict(f"mental model '{model_id}' was created concurrently; retry",
                       constraint=violated_constraint(exc)) from None


def mental_model_refresh(
    *, model: MentalModel, actor: str, content: str | None = None, source_ids: list[str] | None = None,
    add_source_ids: list[str] | None = None, expected_revision: int | None = None, by: Principal | None = None,
) -> MentalModel:
    """New content (rebuilding the structure) and/or provenance, as a new revision.

    Without new content the text stays exactly as it is (Astrocyte's refresh by source ids only
    merges the ids): it is not re-rendered from the structure, which would rewrite plain text.
    """
    authorize(by, model.bank.bank_id, "write")
    doc = model_document(model)
    if content is not None:
        doc = carry_block_ids(doc, parse_markdown(content))
    else:
        content = model.content
    ids = list(model.source_ids)
    if source_ids is not None:
        ids = _clean_ids(source_ids)
    if add_source_ids:
        ids = list(dict.fromkeys([*ids, *_clean_ids(add_source_ids)]))
    return mental_model_save_revision(model=model, doc=doc, actor=actor, action="refresh",
                                      expected_revision=expected_revision, source_ids=ids, content=content)


def mental_model_apply_delta(
    *, model: MentalModel, operations: Any, actor: str, expected_revision: int | None = None,
    by: Principal | None = None,
) -> tuple[MentalModel, DeltaResult]:
    """Apply delta operations; nothing is written when no op applied (no empty revisions)."""
    authorize(by, model.bank.bank_id, "write")
    check_count(operations, "operations")
    base = model_document(model)
    try:
        result = apply_delta_ops(base, operations)
    except DeltaSchemaError as exc:
        raise InvalidInput("; ".join(exc.messages), field="operations", prefix=False,
                           errors=exc.messages, applied=[], skipped=[], changed=False) from None
    except StaleBlockError as exc:
        raise Conflict(str(exc), block_id=exc.block_id, operation=exc.position, current_revision=model.revision,
                       applied=[], skipped=[], changed=False) from None
    if expected_revision is not None and expected_revision != model.revision:
        raise Conflict(f"mental model '{model.model_id}' is at revision {model.revision}, not "
                       f"{expected_revision}; reload it and apply the change again",
                       current_revision=model.revision)
    if result.changed:
        model = mental_model_save_revision(
            model=model, doc=result.doc, actor=actor, action="update", expected_revision=model.revision,
            operations=operations if isinstance(operations, list) else None,
            change_summary={"applied": result.applied, "skipped": result.skipped},
        )
    return model, result


def mental_model_revert(*, model: MentalModel, to_revision: int, actor: str,
                        expected_revision: int | None = None, by: Principal | None = None) -> MentalModel:
    authorize(by, model.bank.bank_id, "write")
    target = MentalModelRevision.objects.filter(bank_id=model.bank_id, model=model, number=to_revision).first()
    if target is None:
        raise NotFound(f"revision {to_revision} of mental model '{model.model_id}' not found")
    doc = load_document(target.structured_doc) if target.structured_doc else parse_markdown(target.content)
    if not target.structured_doc:
        carry_block_ids(model_document(model), doc)
    return mental_model_save_revision(
        model=model, doc=doc, actor=actor, action="revert", expected_revision=expected_revision,
        title=target.title, scope=target.scope, source_ids=list(target.source_ids),
        change_summary={"reverted_to": to_revision}, content=target.content,
    )


def mental_model_delete(*, model: MentalModel, actor: str, reason: str = "", by: Principal | None = None) -> bool:
    """Soft delete (a directive's too); False when it was already deleted (Astrocyte's ``{"deleted": false}``)."""
    authorize(by, model.bank.bank_id, "forget")
    with transaction.atomic():
        moved = MentalModel.objects.filter(bank_id=model.bank_id, pk=model.pk, deleted_at__isnull=True).update(
            deleted_at=timezone.now())
        if moved:
            kind = "directive" if model.kind == MentalModel.Kind.DIRECTIVE else "mental_model"
            audit_record(actor=actor, action=f"{kind}.delete", bank=model.bank, target_ids=[model.model_id],
                         reason=reason)
    return bool(moved)
