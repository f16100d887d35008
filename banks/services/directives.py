"""Directives: operator-authored rules, stored as mental models of kind ``directive``.

Active directives in scope are put ahead of everything else by recall and reflect
(see banks.selectors.live_layers).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from banks.access import Principal, authorize
from banks.live.structured_doc import ParagraphBlock, Section, StructuredDocument, load_document
from banks.models import Bank, MentalModel
from banks.services.audit import audit_record
from banks.services.mental_models import mental_model_create, mental_model_save_revision
from memoryhub.errors import InvalidInput
from memoryhub.input_rules import check_int32, check_text


def rule_document(rule_text: str) -> StructuredDocument:
    return StructuredDocument(sections=[Section(id="rule", heading="Rule", level=2,
                                                blocks=[ParagraphBlock(type="paragraph", text=rule_text)])])


def _rule(rule_text: object) -> str:
    if not isinstance(rule_text, str) or not rule_text.strip():
        raise InvalidInput("a directive needs its rule text", field="rule_text")
    if len(rule_text) > 10_000:
        raise InvalidInput("longer than 10000 characters", field="rule_text")
    return check_text(rule_text, "rule_text").strip()


def directive_create(*, bank: Bank, rule_text: str, actor: str, directive_id: str | None = None,
                     scope: str = "bank", priority: int = 0, by: Principal | None = None) -> MentalModel:
    authorize(by, bank.bank_id, "write")
    text = _rule(rule_text)
    check_int32(priority, "priority")
    model = mental_model_create(
        bank=bank, model_id=directive_id or f"directive:{uuid.uuid4().hex[:12]}", title="Directive", actor=actor,
        structured_doc=rule_document(text).model_dump(), scope=scope or "bank", kind=MentalModel.Kind.DIRECTIVE,
    )
    if model.priority != priority or not model.is_active:
        MentalModel.objects.filter(bank_id=model.bank_id, pk=model.pk).update(priority=priority, is_active=True)
        model.refresh_from_db()
    return model


def directive_update(*, directive: MentalModel, actor: str, rule_text: str | None = None, scope: str | None = None,
                     is_active: bool | None = None, priority: int | None = None,
                     expected_revision: int | None = None, by: Principal | None = None) -> MentalModel:
    authorize(by, directive.bank.bank_id, "write")
    if rule_text is not None or scope is not None:
        doc = rule_document(_rule(rule_text)) if rule_text is not None else None
        directive = mental_model_save_revision(
            model=directive, doc=doc or load_document(directive.structured_doc),
            actor=actor, action="update", expected_revision=expected_revision, scope=scope,
        )
    flags: dict[str, Any] = {}
    if is_active is not None and is_active != directive.is_active:
        flags["is_active"] = is_active
    if priority is not None and priority != directive.priority:
        check_int32(priority, "priority")
        flags["priority"] = priority
    if flags:
        with transaction.atomic():
            MentalModel.objects.filter(bank_id=directive.bank_id, pk=directive.pk).update(**flags)
            action = "directive." + ({True: "activate", False: "deactivate"}[flags["is_active"]]
                                     if "is_active" in flags else "reprioritise")
            audit_record(actor=actor, action=action, bank=directive.bank, target_ids=[directive.model_id],
                         details=flags)
        directive.refresh_from_db()
    return directive
