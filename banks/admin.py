"""Raw records for administrators. Changes go through the services so they are audited."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from banks import models
from banks.services.memories import memory_archive, memory_restore
from banks.services.tokens import token_revoke


def _actor(request: HttpRequest) -> str:
    return f"user:{request.user.get_username()}"


@admin.register(models.Bank)
class BankAdmin(admin.ModelAdmin):
    list_display = ("bank_id", "name", "last_activity_at", "created_at", "deleted_at")
    search_fields = ("bank_id", "name", "description")
    list_filter = ("deleted_at",)
    readonly_fields = ("created_at", "updated_at", "last_activity_at")


@admin.register(models.BankMembership)
class BankMembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "bank", "role", "created_at")
    list_filter = ("role",)
    search_fields = ("user__username", "bank__bank_id")
    autocomplete_fields = ("bank",)


@admin.register(models.Memory)
class MemoryAdmin(admin.ModelAdmin):
    list_display = ("memory_id", "bank", "short_text", "fact_type", "retained_at", "archived_at", "forgotten_at")
    list_filter = ("fact_type", "memory_layer", ("archived_at", admin.EmptyFieldListFilter),
                   ("forgotten_at", admin.EmptyFieldListFilter))
    search_fields = ("memory_id", "text", "bank__bank_id")
    readonly_fields = ("content_hash", "embedding_model", "embedding_dims", "retained_at", "updated_at",
                       "archived_at", "forgotten_at")
    exclude = ("embedding",)
    list_select_related = ("bank",)
    show_full_result_count = False  # no COUNT(*) over millions of rows
    actions = ("archive_selected", "restore_selected")

    @admin.display(description="text")
    def short_text(self, obj: models.Memory) -> str:
        return obj.text[:80]

    @admin.action(description="Archive selected memories")
    def archive_selected(self, request: HttpRequest, queryset: QuerySet[models.Memory]) -> None:
        for memory in queryset.select_related("bank")[:1000]:
            memory_archive(memory=memory, actor=_actor(request), reason="admin action")
        messages.success(request, "Archived.")

    @admin.action(description="Restore selected memories")
    def restore_selected(self, request: HttpRequest, queryset: QuerySet[models.Memory]) -> None:
        for memory in queryset.select_related("bank")[:1000]:
            memory_restore(memory=memory, actor=_actor(request), reason="admin action")
        messages.success(request, "Restored.")


@admin.register(models.Entity)
class EntityAdmin(admin.ModelAdmin):
    list_display = ("name", "entity_type", "bank", "mention_count")
    list_filter = ("entity_type",)
    search_fields = ("name", "entity_id", "bank__bank_id")


@admin.register(models.EntityLink)
class EntityLinkAdmin(admin.ModelAdmin):
    list_display = ("entity_a", "link_type", "entity_b", "confidence", "bank")
    list_filter = ("link_type",)
    search_fields = ("entity_a__name", "entity_b__name", "bank__bank_id")


@admin.register(models.MemoryLink)
class MemoryLinkAdmin(admin.ModelAdmin):
    list_display = ("source", "link_type", "target", "bank")
    list_filter = ("link_type",)
    search_fields = ("source__memory_id", "target__memory_id")


class ObservationEvidenceInline(admin.TabularInline):
    model = models.ObservationEvidence
    extra = 0
    fields = ("memory_ref", "evidence_at", "attached_at")
    readonly_fields = ("attached_at",)


@admin.register(models.Observation)
class ObservationAdmin(admin.ModelAdmin):
    list_display = ("observation_id", "bank", "scope", "proof_count", "confidence", "updated_at", "invalidated_at")
    list_filter = ("scope", ("invalidated_at", admin.EmptyFieldListFilter))
    search_fields = ("observation_id", "text", "bank__bank_id")
    exclude = ("embedding",)
    inlines = [ObservationEvidenceInline]


class RevisionInline(admin.TabularInline):
    model = models.MentalModelRevision
    extra = 0
    fields = ("number", "action", "author", "created_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(models.MentalModel)
class MentalModelAdmin(admin.ModelAdmin):
    list_display = ("model_id", "bank", "kind", "title", "scope", "revision", "is_active", "deleted_at")
    list_filter = ("kind", "is_active", ("deleted_at", admin.EmptyFieldListFilter))
    search_fields = ("model_id", "title", "content", "bank__bank_id")
    readonly_fields = ("revision", "refreshed_at", "created_at")
    inlines = [RevisionInline]


@admin.register(models.MentalModelRevision)
class MentalModelRevisionAdmin(admin.ModelAdmin):
    list_display = ("model", "number", "action", "author", "created_at")
    search_fields = ("model__model_id",)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(models.WikiPage)
class WikiPageAdmin(admin.ModelAdmin):
    list_display = ("page_id", "bank", "scope", "title", "revision", "updated_at")
    search_fields = ("page_id", "title", "content")


@admin.register(models.AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("created_at", "actor", "action", "bank_ref", "compliance", "reason")
    list_filter = ("action", "compliance")
    search_fields = ("actor", "bank_ref", "reason", "target_ids")
    date_hierarchy = "created_at"
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(models.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "prefix", "created_at", "expires_at", "revoked_at", "last_used_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("name", "prefix")
    readonly_fields = ("prefix", "secret_hash", "created_at", "last_used_at", "revoked_at")
    actions = ("revoke_selected",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Creating a token must show its secret once: the curation UI and the CLI do that.
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[models.ApiToken]) -> None:
        for token in queryset:
            token_revoke(token=token, actor=_actor(request), reason="admin action")
        messages.success(request, "Revoked.")


@admin.register(models.Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "state", "bank", "progress_done", "progress_total", "created_at", "finished_at")
    list_filter = ("kind", "state")
    search_fields = ("id", "bank__bank_id", "created_by")
    readonly_fields = ("created_at", "started_at", "finished_at", "heartbeat_at")


@admin.register(models.WebhookSource)
class WebhookSourceAdmin(admin.ModelAdmin):
    """Sources that may push to /v1/ingest/webhook/<source_id>, each signing with its own secret."""

    list_display = ("source_id", "bank", "enabled", "created_at")
    list_filter = ("enabled",)
    search_fields = ("source_id", "bank__bank_id")
    autocomplete_fields = ("bank",)
