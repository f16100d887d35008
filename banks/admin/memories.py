"""Memories, entities and links in the admin: edits and removals go through the services."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.postgres.search import SearchQuery
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from banks.access import principal_for_user
from banks.admin.scale import FixedChoicesFilter, ReadOnlyAdmin, ScaledAdmin, exact_id
from banks.admin.scope import BankScopedAdmin
from banks.content import content_hash
from banks.models import Bank, Entity, EntityLink, Memory, MemoryLink
from banks.services.forget import memory_forget
from banks.services.memories import validate_metadata, validate_tags, validate_text
from banks.services.memory_archiving import memories_archive, memories_restore
from banks.services.memory_edit import memory_update
from banks.services.memory_rows import ensure_editable
from banks.text_search import config_name
from memoryhub.errors import MemoryHubError

# An admin action touches at most this many selected memories; more is a bulk job for the curation UI.
ACTION_CAP = 1000


def admin_actor(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


def full_text(term: str) -> Q:
    """The memory's generated full-text column, served by its GIN index.

    The admin searches every bank at once, in the default language (accents folded); a bank with
    another language matches where both stem a word alike (its recall uses its own)."""
    return Q(search_vector=SearchQuery(term, config=config_name(None), search_type="websearch"))


class FactTypeFilter(FixedChoicesFilter):
    title = "fact type"
    parameter_name = field_name = "fact_type"
    values = (("world", "world"), ("experience", "experience"), ("observation", "observation"))


class MemoryAdminForm(forms.ModelForm):
    """The fields an operator may change; the services' own rules decide what is acceptable."""

    class Meta:
        model = Memory
        fields = ("text", "tags", "metadata", "fact_type", "occurred_at")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            ensure_editable(self.instance)
        except MemoryHubError as exc:
            raise forms.ValidationError(exc.message) from None
        checks: dict[str, Callable[[Any], Any]] = {
            "text": lambda v: validate_text(v, field="text"), "tags": validate_tags, "metadata": validate_metadata}
        for name, check in checks.items():
            if name in self.changed_data and name in data:
                try:
                    check(data[name])
                except MemoryHubError as exc:
                    self.add_error(name, exc.message)
        text = data.get("text")
        if "text" in self.changed_data and isinstance(text, str) and Memory.objects.live().filter(
                bank_id=self.instance.bank_id, content_hash=content_hash(text)).exclude(pk=self.instance.pk).exists():
            self.add_error("text", "Another live memory of this bank already holds this text.")
        return data


@admin.register(Memory)
class MemoryAdmin(BankScopedAdmin, ScaledAdmin):
    form = MemoryAdminForm
    list_display = ("memory_id", "bank", "short_text", "fact_type", "retained_at", "archived_at", "forgotten_at")
    list_filter = (FactTypeFilter, ("archived_at", admin.EmptyFieldListFilter),
                   ("forgotten_at", admin.EmptyFieldListFilter))
    search_fields = ("memory_id", "text")
    search_help_text = "A memory id, or words of the text (full-text search)."
    readonly_fields = ("bank", "memory_id", "merged_into", "memory_layer", "source", "pii", "content_hash",
                       "embedding_model", "embedding_dims", "retained_at", "created_at", "updated_at",
                       "archived_at", "forgotten_at")
    fields = ("bank", "memory_id", "text", "tags", "metadata", "fact_type", "occurred_at", *readonly_fields[2:])
    raw_id_fields = ("merged_into",)
    list_select_related = ("bank",)
    actions = ("archive_selected", "restore_selected", "forget_selected")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Memory]:
        # Never read vectors for a page of rows.
        return super().get_queryset(request).defer("embedding", "search_vector")

    def search_condition(self, term: str) -> Q | None:
        return full_text(term) | Q(memory_id=term) if exact_id(term) else full_text(term)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # memories are retained (API, curation, imports): dedup, entities, audit

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the "forget" action tombstones through the service; erasure is the curation UI's

    @admin.display(description="text")
    def short_text(self, obj: Memory) -> str:
        return obj.text[:80]

    def save_model(self, request: HttpRequest, obj: Memory, form: Any, change: bool) -> None:
        """Through memory_update: a new text is re-hashed and re-embedded, every change audited."""
        data = form.cleaned_data
        # The form refused a tombstone; one forgotten since is refused here (409, as everywhere).
        memory_update(memory=Memory.objects.select_related("bank").get(pk=obj.pk), actor=admin_actor(request),
                      text=data.get("text"), tags=data.get("tags"), metadata=data.get("metadata"),
                      fact_type=data.get("fact_type") or None, occurred_at=data.get("occurred_at"),
                      reason="admin edit", by=principal_for_user(request.user))

    def _by_bank(self, queryset: QuerySet[Memory]) -> list[tuple[Bank, list[str]]]:
        rows = list(queryset.order_by("pk").values_list("bank_id", "memory_id")[:ACTION_CAP])
        banks = Bank.objects.in_bulk({bank_pk for bank_pk, _ in rows})
        return [(bank, [m for b, m in rows if b == bank.pk]) for bank in banks.values()]

    @admin.action(description="Archive selected memories")
    def archive_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        done = sum(len(memories_archive(bank=bank, memory_ids=ids, actor=admin_actor(request), reason="admin action"))
                   for bank, ids in self._by_bank(queryset))
        messages.success(request, f"Archived {done} memories.")

    @admin.action(description="Restore selected memories")
    def restore_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        restored = clashing = 0
        for bank, ids in self._by_bank(queryset):
            done, clash = memories_restore(bank=bank, memory_ids=ids, actor=admin_actor(request), reason="admin action")
            restored, clashing = restored + len(done), clashing + len(clash)
        messages.success(request, f"Restored {restored} memories" +
                         (f"; {clashing} stay archived (a live memory holds the same text)." if clashing else "."))

    @admin.action(description="Forget selected memories (tombstone)")
    def forget_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        done = sum(memory_forget(bank=bank, actor=admin_actor(request), memory_ids=ids, reason="admin action",
                                 by=principal_for_user(request.user)).deleted_count for bank, ids in self._by_bank(queryset))
        messages.success(request, f"Forgot {done} memories.")


@admin.register(Entity)
class EntityAdmin(BankScopedAdmin, ReadOnlyAdmin):
    list_display = ("name", "entity_id", "entity_type", "bank", "mention_count")
    search_fields = ("entity_id", "name")
    search_help_text = "An entity id or exact name."
    list_select_related = ("bank",)

    def search_condition(self, term: str) -> Q | None:
        return Q(name=term) | Q(entity_id=term) | Q(entity_id=term.lower())


@admin.register(EntityLink)
class EntityLinkAdmin(BankScopedAdmin, ReadOnlyAdmin):
    list_display = ("entity_a", "link_type", "entity_b", "confidence", "bank")
    search_fields = ("entity_a__entity_id", "entity_b__entity_id")
    search_help_text = "The id of either entity."
    raw_id_fields = ("entity_a", "entity_b")
    list_select_related = ("entity_a", "entity_b", "bank")

    def search_condition(self, term: str) -> Q | None:
        return Q(entity_a__entity_id=term) | Q(entity_b__entity_id=term)


@admin.register(MemoryLink)
class MemoryLinkAdmin(BankScopedAdmin, ReadOnlyAdmin):
    list_display = ("source", "link_type", "target", "bank")
    search_fields = ("source__memory_id", "target__memory_id")
    search_help_text = "The id of either memory."
    raw_id_fields = ("source", "target")
    list_select_related = ("source", "target", "bank")

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryLink]:
        return super().get_queryset(request).defer(
            "source__embedding", "source__search_vector", "source__text",
            "target__embedding", "target__search_vector", "target__text")

    def search_condition(self, term: str) -> Q | None:
        return Q(source__memory_id=term) | Q(target__memory_id=term)
