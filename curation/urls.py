from django.contrib.auth import views as auth_views
from django.urls import path, register_converter

from curation.converters import RecordIdConverter
from curation.login_guard import GuardedAuthenticationForm
from curation.views import (
    banks,
    duplicates,
    holds,
    live,
    memories,
    memory_entities,
    operator,
    playground,
    records,
    timeline,
)

register_converter(RecordIdConverter, "rid")

app_name = "curation"

urlpatterns = [
    path("", banks.home, name="home"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True,
                                                authentication_form=GuardedAuthenticationForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("banks/new", banks.bank_new, name="bank-new"),
    path("banks/<str:bank_id>/", banks.bank_detail, name="bank"),
    path("banks/<str:bank_id>/settings", banks.bank_settings, name="bank-settings"),
    path("banks/<str:bank_id>/delete", banks.bank_delete_view, name="bank-delete"),
    path("banks/<str:bank_id>/holds", holds.hold_place, name="bank-hold"),
    path("banks/<str:bank_id>/holds/<str:hold_id>/release", holds.hold_lift, name="bank-hold-release"),
    path("banks/<str:bank_id>/lifecycle", holds.lifecycle_save, name="bank-lifecycle"),
    path("banks/<str:bank_id>/lifecycle/run", holds.lifecycle_run_now, name="bank-lifecycle-run"),
    path("banks/<str:bank_id>/reflect/", banks.reflect_playground, name="reflect"),
    path("banks/<str:bank_id>/memories/", memories.memory_list, name="memories"),
    path("banks/<str:bank_id>/memories/new", memories.memory_new, name="memory-new"),
    path("banks/<str:bank_id>/memories/bulk", memories.memory_bulk, name="memory-bulk"),
    path("banks/<str:bank_id>/memories/<rid:memory_id>/", memories.memory_detail, name="memory"),
    path("banks/<str:bank_id>/memories/<rid:memory_id>/row", memories.memory_row, name="memory-row"),
    path("banks/<str:bank_id>/memories/<rid:memory_id>/edit", memories.memory_edit, name="memory-edit"),
    path("banks/<str:bank_id>/memories/<rid:memory_id>/state", memories.memory_state, name="memory-state"),
    path("banks/<str:bank_id>/memories/<rid:memory_id>/merge", memories.memory_merge_view, name="memory-merge"),
    path("banks/<str:bank_id>/memories/<rid:memory_id>/entities", memory_entities.memory_entities,
         name="memory-entities"),
    path("banks/<str:bank_id>/models/", live.models, name="models"),
    path("banks/<str:bank_id>/models/new", live.model_new, name="model-new"),
    path("banks/<str:bank_id>/models/<rid:model_id>/", live.model_detail, name="model"),
    path("banks/<str:bank_id>/models/<rid:model_id>/edit", live.model_edit, name="model-edit"),
    path("banks/<str:bank_id>/models/<rid:model_id>/action", live.model_action, name="model-action"),
    path("banks/<str:bank_id>/directives/", live.directives, name="directives"),
    path("banks/<str:bank_id>/directives/save", live.directive_save, name="directive-save"),
    path("banks/<str:bank_id>/observations/", live.observations, name="observations"),
    path("banks/<str:bank_id>/observations/save", live.observation_save, name="observation-save"),
    path("banks/<str:bank_id>/graph/", records.graph, name="graph"),
    path("banks/<str:bank_id>/graph/link", records.graph_link, name="graph-link"),
    path("banks/<str:bank_id>/duplicates/", duplicates.duplicates, name="duplicates"),
    path("banks/<str:bank_id>/duplicates/action", duplicates.duplicates_action, name="duplicates-action"),
    path("banks/<str:bank_id>/duplicates/scan", duplicates.duplicates_scan, name="duplicates-scan"),
    path("banks/<str:bank_id>/duplicates/scan/<int:job_id>", duplicates.duplicates_scan_status,
         name="duplicates-scan-status"),
    path("banks/<str:bank_id>/time/", records.time_travel, name="time"),
    path("banks/<str:bank_id>/recall/", playground.recall_playground, name="recall-playground"),
    path("banks/<str:bank_id>/timeline/", timeline.timeline, name="timeline"),
    path("audit/", records.audit_log, name="audit"),
    path("audit.csv", records.audit_csv, name="audit-csv"),
    path("preferences/", operator.preferences, name="preferences"),
    path("tokens/", records.tokens, name="tokens"),
    path("tokens/new", records.token_new, name="token-new"),
    path("tokens/<str:prefix>/revoke", records.token_revoke_view, name="token-revoke"),
]
