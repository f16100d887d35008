"""Every relation that ``bank_rows_delete`` may follow has an ``on_delete`` rule it applies.

It applies ``CASCADE`` (deletes the related rows, and theirs), ``SET_NULL`` (clears the reference) and
``DO_NOTHING``; any other rule (``PROTECT``, ``RESTRICT``, ``SET_DEFAULT``, ``SET(...)``) would be skipped
silently when a bank's rows are deleted. A new relation with such a rule fails here, listed by name,
rather than deleting rows wrongly in production."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db import models

from banks.models.bank_scoped import BankScoped, _bank_column, _reverse_relations

APPLIED = {models.CASCADE, models.SET_NULL, models.DO_NOTHING}


def _relations() -> list[tuple[str, Any]]:
    """(``Model.field -> Target``, rule) for every relation pointing at a model whose rows belong to a bank
    (bank-scoped, or with a ``bank_id`` column), and, through each cascade, at the models whose rows the
    cascade deletes."""
    found: list[tuple[str, Any]] = []
    seen: set[type[models.Model]] = set()
    todo = [m for m in apps.get_models() if issubclass(m, BankScoped) or _bank_column(m)]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for relation in _reverse_relations(model):
            related = relation.related_model
            found.append((f"{related._meta.label}.{relation.field.name} -> {model._meta.label}", relation.on_delete))
            if relation.on_delete is models.CASCADE:
                todo.append(related)
    return found


def test_the_bank_scoped_models_have_relations():
    names = [name for name, _ in _relations()]
    assert "banks.MemoryEntity.memory -> banks.Memory" in names
    assert any(rule is models.SET_NULL for _, rule in _relations())


def test_every_relation_has_a_rule_bank_rows_delete_applies():
    assert [name for name, rule in _relations() if rule not in APPLIED] == []
