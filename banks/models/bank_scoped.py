"""Rows that belong to one bank: every statement Django writes for an instance names the bank.

Distributed by ``bank_id`` (docs/scaling.md), a statement that pins no bank goes to every shard, and an
``UPDATE`` or ``DELETE`` of that kind locks each. Django's instance methods address a row by its
primary key alone: ``save()`` updates ``WHERE id = …``, ``refresh_from_db()`` (and loading a deferred
field) reads ``WHERE id = …``, ``delete()`` collects the related rows by their parent's id and deletes
``WHERE id IN (…)``. This mixin is the one place that adds the bank to each of them, so services may
keep using the instance methods (and tests' set-up with them) rather than each spelling
``filter(bank_id=…, id=…)``. The test suite's statement-routing check (tests/bank_routing.py) holds
every statement to this.

Deletion cannot be pinned inside Django's collector, so ``delete()`` and ``bank_rows_delete`` apply the
relations' ``on_delete`` rules here, each as one statement on the bank's rows: ``CASCADE`` deletes the
related rows (and theirs), ``SET_NULL`` clears the reference, ``DO_NOTHING`` leaves them; no bank table
uses another rule, which tests/banks/test_bank_scoped_relations.py holds every relation to. There are
no delete signals on these models to send.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.db import models


def _bank_column(model: type[models.Model]) -> bool:
    return any(f.attname == "bank_id" for f in model._meta.concrete_fields)


def _reverse_relations(model: type[models.Model]) -> list[Any]:
    """Every relation pointing at ``model``, including those hidden by ``related_name="+"`` (a merge's
    ``merged_into``, a duplicate pair's two memories); the many-to-many ones go by their through rows."""
    return [r for r in model._meta.get_fields(include_hidden=True)
            if r.auto_created and not r.concrete and (r.one_to_many or r.one_to_one)]


def bank_rows_delete(model: type[models.Model], bank_pk: int, pks: Collection[Any]) -> dict[str, int]:
    """Delete the rows ``pks`` of ``model`` in bank ``bank_pk`` with what depends on them, every statement
    pinned to the bank; returns the rows deleted per model label, as ``QuerySet.delete()`` does."""
    counts: dict[str, int] = {}
    if not pks:
        return counts
    keys = list(pks)
    for relation in _reverse_relations(model):
        related: type[models.Model] = relation.related_model
        field = relation.field
        rows = related._base_manager.filter(**{f"{field.name}__in": keys})
        if _bank_column(related):
            rows = rows.filter(bank_id=bank_pk)
        rule = relation.on_delete
        if rule is models.CASCADE:
            if _reverse_relations(related):
                child_pks = list(rows.values_list("pk", flat=True))
                for label, n in bank_rows_delete(related, bank_pk, child_pks).items():
                    counts[label] = counts.get(label, 0) + n
            else:
                gone = rows._raw_delete(rows.db)
                if gone:
                    counts[related._meta.label] = counts.get(related._meta.label, 0) + gone
        elif rule is models.SET_NULL:
            rows.update(**{field.name: None})
        # DO_NOTHING leaves the rows; no relation has another rule (tests/banks/test_bank_scoped_relations.py).
    own = model._base_manager.filter(bank_id=bank_pk, pk__in=keys)
    gone = own._raw_delete(own.db)
    if gone:
        counts[model._meta.label] = counts.get(model._meta.label, 0) + gone
    return counts


class BankScoped(models.Model):
    """A model whose rows carry ``bank_id``: instance updates, reloads and deletions name the bank."""

    class Meta:
        abstract = True

    def _known_bank(self) -> int | None:
        # Read from the instance's own values: a deferred bank_id would be loaded by refresh_from_db itself,
        # so a row read with ``only()`` must name ``bank_id`` among its fields for its later loads to be pinned.
        return self.__dict__.get("bank_id")

    def _do_update(self, base_qs: Any, *args: Any, **kwargs: Any) -> Any:
        # Django filters ``base_qs`` by the primary key inside; the bank is added to the same statement.
        bank = self._known_bank()
        if bank is not None:
            base_qs = base_qs.filter(bank_id=bank)
        return super()._do_update(base_qs, *args, **kwargs)

    def refresh_from_db(self, using: str | None = None, fields: Any = None, from_queryset: Any = None) -> None:
        bank = self._known_bank()
        if from_queryset is None and bank is not None:
            from_queryset = type(self)._base_manager.db_manager(using, hints={"instance": self}).filter(
                **{"bank_id": bank})  # on the concrete model (the abstract base has no such field to check)
        super().refresh_from_db(using=using, fields=fields, from_queryset=from_queryset)

    def delete(self, using: Any = None, keep_parents: bool = False) -> tuple[int, dict[str, int]]:
        bank = self._known_bank()
        if bank is None or self.pk is None:
            return super().delete(using=using, keep_parents=keep_parents)
        counts = bank_rows_delete(type(self), bank, [self.pk])
        self.pk = None  # as Django's delete leaves the instance
        return sum(counts.values()), counts
