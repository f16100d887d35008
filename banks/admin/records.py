"""Banks, memberships, live memory, the audit log, tokens and jobs in the admin."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html_join

from banks import models
from banks.access import principal_for_user
from banks.admin.memories import admin_actor, full_text
from banks.admin.scale import FixedChoicesFilter, IndexedValuesFilter, ReadOnlyAdmin, ScaledAdmin, exact_id
from banks.admin.scope import BankScopedAdmin, tokens_within_banks
from banks.services.banks import bank_delete, bank_update
from banks.services.memberships import membership_remove, membership_set
from banks.services.observations import observation_invalidate
from banks.services.tokens import token_revoke
from banks.services.webhook_sources import webhook_source_delete, webhook_source_save
from memoryhub.errors import AccessDenied

# A change page lists at most this many rows of a one-to-many relation (evidence, revisions).
RELATED_SHOWN = 20


@admin.register(models.Bank)
class BankAdmin(BankScopedAdmin, ScaledAdmin):
    bank_field = "pk"
    list_display = ("bank_id", "name", "last_activity_at", "created_at", "deleted_at")
    search_fields = ("bank_id", "name")
    list_filter = ("deleted_at",)
    fields = ("bank_id", "name", "description", "embedding_provider", "dedup_threshold", "config",
              "created_at", "updated_at", "last_activity_at", "deleted_at")
    readonly_fields = ("bank_id", "created_at", "updated_at", "last_activity_at", "deleted_at")

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
                           ) -> tuple[QuerySet[Any], bool]:
        # Banks are few (thousands at most): a substring search stays cheap, and autocomplete needs it.
        return admin.ModelAdmin.get_search_results(self, request, queryset, search_term)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # banks are created by retain, the API or the curation UI

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Superusers only, through the bank's own delete page (its confirmation step); the deletion
        # itself is the service's, as from the API and the curation UI.
        return bool(request.user.is_superuser) and (obj is None or obj.deleted_at is None)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[list[str], dict[str, int], set[str],
                                                                              list[str]]:
        """A summary, not Django's list of every related row (a million memories would be listed)."""
        from banks.selectors.holds import active_hold_ids
        from banks.selectors.memories import bounded_count

        summary, protected = [], []
        for bank in objs:
            n, more = bounded_count(bank.memories.all())
            summary.append(f"{bank.bank_id}: {n}{'+' if more else ''} memories and everything else in the bank")
            if active_hold_ids(bank):
                protected.append(f"{bank.bank_id} is under a legal hold")
        return summary, {"banks": len(summary)}, set(), protected

    def delete_model(self, request: HttpRequest, obj: models.Bank) -> None:
        job = bank_delete(bank=obj, actor=admin_actor(request), confirm=obj.bank_id, reason="admin",
                          by=principal_for_user(request.user))
        if job is not None:
            self.message_user(request, f"Bank {obj.bank_id} is gone from every route; its memories are being "
                                       f"deleted in the background (job {job.pk}).", messages.INFO)

    def save_model(self, request: HttpRequest, obj: models.Bank, form: Any, change: bool) -> None:
        bank_update(bank=models.Bank.objects.get(pk=obj.pk), actor=admin_actor(request),
                    by=principal_for_user(request.user),
                    **{name: form.cleaned_data[name] for name in form.changed_data})


@admin.register(models.BankMembership)
class BankMembershipAdmin(BankScopedAdmin, ScaledAdmin):
    list_display = ("user", "bank", "role", "created_at")
    list_filter = ("role",)
    search_fields = ("user__username", "bank__bank_id")
    autocomplete_fields = ("bank", "user")
    list_select_related = ("user", "bank")

    def search_condition(self, term: str) -> Q | None:
        return Q(user__username=term) | Q(bank__bank_id=term)

    # Who may read a bank: every change through the service, audited on the bank.
    def save_model(self, request: HttpRequest, obj: models.BankMembership, form: Any, change: bool) -> None:
        saved = membership_set(user=obj.user, bank=obj.bank, role=obj.role, actor=admin_actor(request),
                               membership=obj if change else None, by=principal_for_user(request.user))
        obj.pk = saved.pk

    def delete_model(self, request: HttpRequest, obj: models.BankMembership) -> None:
        membership_remove(membership=obj, actor=admin_actor(request), by=principal_for_user(request.user))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[models.BankMembership]) -> None:
        by = principal_for_user(request.user)
        for membership in queryset.select_related("user", "bank"):
            membership_remove(membership=membership, actor=admin_actor(request), by=by)


@admin.register(models.Observation)
class ObservationAdmin(BankScopedAdmin, ReadOnlyAdmin):
    list_display = ("observation_id", "bank", "scope", "proof_count", "confidence", "updated_at", "invalidated_at")
    list_filter = (("invalidated_at", admin.EmptyFieldListFilter),)
    search_fields = ("observation_id", "text")
    search_help_text = "An observation id, or words of its text (full-text search)."
    exclude = ("embedding", "search_vector")
    readonly_fields = ("evidence_shown",)
    list_select_related = ("bank",)
    actions = ("invalidate_selected",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[models.Observation]:
        return super().get_queryset(request).defer("embedding", "search_vector")

    def search_condition(self, term: str) -> Q | None:
        return full_text(term) | Q(observation_id=term) if exact_id(term) else full_text(term)

    @admin.display(description=f"evidence (first {RELATED_SHOWN})")
    def evidence_shown(self, obj: models.Observation) -> str:
        rows = obj.evidence.order_by("evidence_at").values_list("memory_ref", "evidence_at")[:RELATED_SHOWN]
        return format_html_join(", ", "{} ({})", ((ref, f"{at:%Y-%m-%d}") for ref, at in rows)) or "none"

    @admin.action(description="Invalidate selected observations")
    def invalidate_selected(self, request: HttpRequest, queryset: QuerySet[models.Observation]) -> None:
        by = principal_for_user(request.user)
        done = sum(observation_invalidate(observation=o, actor=admin_actor(request), reason="admin action", by=by)
                   for o in queryset.select_related("bank")[:RELATED_SHOWN * 50])
        messages.success(request, f"Invalidated {done} observations.")


class ModelKindFilter(FixedChoicesFilter):
    title = "kind"
    parameter_name = field_name = "kind"
    values = tuple((str(value), str(label)) for value, label in models.MentalModel.Kind.choices)


@admin.register(models.MentalModel)
class MentalModelAdmin(BankScopedAdmin, ReadOnlyAdmin):
    list_display = ("model_id", "bank", "kind", "title", "scope", "revision", "is_active", "deleted_at")
    list_filter = (ModelKindFilter, "is_active", ("deleted_at", admin.EmptyFieldListFilter))
    search_fields = ("model_id",)
    search_help_text = "A model id."
    readonly_fields = ("revisions_shown",)
    list_select_related = ("bank",)

    def search_condition(self, term: str) -> Q | None:
        return Q(model_id=term)

    @admin.display(description=f"latest revisions (up to {RELATED_SHOWN})")
    def revisions_shown(self, obj: models.MentalModel) -> str:
        rows = obj.revisions.filter(bank_id=obj.bank_id).order_by("-number").values_list("number", "action", "author")[:RELATED_SHOWN]
        return format_html_join(", ", "#{} {} by {}", rows) or "none"


@admin.register(models.MentalModelRevision)
class MentalModelRevisionAdmin(BankScopedAdmin, ReadOnlyAdmin):
    bank_field = "model__bank"  # the model's bank is indexed; the revision's own copy is not
    list_display = ("model", "number", "action", "author", "created_at")
    search_fields = ("model__model_id",)
    search_help_text = "A model id."
    raw_id_fields = ("model",)
    list_select_related = ("model",)

    def search_condition(self, term: str) -> Q | None:
        return Q(model__model_id=term)


@admin.register(models.WikiPage)
class WikiPageAdmin(BankScopedAdmin, ReadOnlyAdmin):
    list_display = ("page_id", "bank", "scope", "title", "revision", "updated_at")
    search_fields = ("page_id",)
    search_help_text = "A page id."
    list_select_related = ("bank",)

    def search_condition(self, term: str) -> Q | None:
        return Q(page_id=term)


class AuditActionFilter(IndexedValuesFilter):
    title = "action"
    parameter_name = field_name = "action"


@admin.register(models.AuditEvent)
class AuditEventAdmin(BankScopedAdmin, ReadOnlyAdmin):
    list_display = ("created_at", "actor", "action", "bank_ref", "compliance", "reason")
    # Fixed periods (no query to build them), unlike date_hierarchy's DISTINCT over the whole log.
    list_filter = (AuditActionFilter, "compliance", ("created_at", admin.DateFieldListFilter))
    search_fields = ("target_ids", "bank_ref")
    search_help_text = "A target id (memory, model, token...) or a bank id."

    def search_condition(self, term: str) -> Q | None:
        return Q(target_ids__contains=[term]) | Q(bank_ref=term)


@admin.register(models.ApiToken)
class ApiTokenAdmin(BankScopedAdmin, ScaledAdmin):
    list_display = ("name", "prefix", "created_at", "expires_at", "revoked_at", "last_used_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("name", "prefix")
    readonly_fields = ("prefix", "secret_hash", "grants", "created_by", "created_at", "last_used_at", "revoked_at")
    actions = ("revoke_selected",)

    def scope(self, queryset: QuerySet[Any], user: Any) -> QuerySet[Any]:
        # Not one bank's row: a staff user sees the tokens they minted or whose grants lie within their banks.
        return tokens_within_banks(queryset, user)

    def search_condition(self, term: str) -> Q | None:
        return Q(prefix=term) | Q(name=term)

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Creating a token must show its secret once: the curation UI and the CLI do that.
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # grants and expiry change through the curation UI, audited

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoking keeps the record; see the action

    @admin.action(description="Revoke selected tokens")
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[models.ApiToken]) -> None:
        by, refused = principal_for_user(request.user), 0
        for token in queryset[:1000]:
            try:
                token_revoke(token=token, actor=admin_actor(request), reason="admin action", by=by)
            except AccessDenied:
                refused += 1
        messages.success(request, f"Revoked; {refused} not yours left as they were." if refused else "Revoked.")


class JobKindFilter(IndexedValuesFilter):
    title = "kind"
    parameter_name = field_name = "kind"


@admin.register(models.Job)
class JobAdmin(BankScopedAdmin, ReadOnlyAdmin):
    list_display = ("id", "kind", "state", "bank", "progress_done", "progress_total", "created_at", "finished_at")
    list_filter = (JobKindFilter, "state")
    search_fields = ("id", "bank__bank_id")
    search_help_text = "A job number or a bank id."
    list_select_related = ("bank",)

    def search_condition(self, term: str) -> Q | None:
        return Q(pk=int(term)) | Q(bank__bank_id=term) if term.isdigit() and len(term) < 18 else Q(bank__bank_id=term)


@admin.register(models.WebhookSource)
class WebhookSourceAdmin(BankScopedAdmin, ScaledAdmin):
    """Sources that may push to /v1/ingest/webhook/<source_id>, each signing with its own secret."""

    list_display = ("source_id", "bank", "enabled", "signature_scheme", "last_delivery_at", "last_error_at",
                    "last_error", "created_at")
    list_filter = ("enabled", "signature_scheme")
    # The delivery state is written by the ingest route, never by hand.
    readonly_fields = ("last_delivery_at", "last_error_at", "last_error", "delivery_count", "error_count")
    search_fields = ("source_id", "bank__bank_id")
    autocomplete_fields = ("bank",)
    list_select_related = ("bank",)

    def search_condition(self, term: str) -> Q | None:
        return Q(source_id=term) | Q(bank__bank_id=term)

    def get_exclude(self, request: HttpRequest, obj: Any = None) -> Any:
        # The secret lets anyone write into the bank: shown to who administers the bank, never to its viewers.
        exclude = list(super().get_exclude(request, obj) or ())
        if obj is not None and not principal_for_user(request.user).can(obj.bank.bank_id, "admin"):
            exclude.append("secret")
        return exclude

    # Its secret decides who writes into the bank: every change through the service, audited on the bank.
    def save_model(self, request: HttpRequest, obj: models.WebhookSource, form: Any, change: bool) -> None:
        webhook_source_save(source=obj, actor=admin_actor(request), changed=list(form.changed_data) if change else None,
                            by=principal_for_user(request.user))

    def delete_model(self, request: HttpRequest, obj: models.WebhookSource) -> None:
        webhook_source_delete(source=obj, actor=admin_actor(request), by=principal_for_user(request.user))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[models.WebhookSource]) -> None:
        by = principal_for_user(request.user)
        for source in queryset.select_related("bank"):
            webhook_source_delete(source=source, actor=admin_actor(request), by=by)
