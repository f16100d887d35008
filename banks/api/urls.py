from django.urls import path

from banks.api import views_banks, views_core, views_live, views_models, views_reflect

app_name = "v1"

urlpatterns = [
    path("retain", views_core.RetainApi.as_view(), name="retain"),
    path("recall", views_core.RecallApi.as_view(), name="recall"),
    path("debug/recall", views_core.DebugRecallApi.as_view(), name="debug-recall"),
    path("history", views_core.HistoryApi.as_view(), name="history"),
    path("forget", views_core.ForgetApi.as_view(), name="forget"),
    path("reflect", views_reflect.ReflectApi.as_view(), name="reflect"),
    path("audit", views_reflect.AuditApi.as_view(), name="audit"),
    path("compile", views_reflect.CompileApi.as_view(), name="compile"),
    path("graph/search", views_reflect.GraphSearchApi.as_view(), name="graph-search"),
    path("graph/neighbors", views_reflect.GraphNeighborsApi.as_view(), name="graph-neighbors"),
    path("mental-models", views_models.MentalModelsApi.as_view(), name="mental-models"),
    path("mental-models/<str:model_id>", views_models.MentalModelApi.as_view(), name="mental-model"),
    path("mental-models/<str:model_id>/refresh", views_models.MentalModelRefreshApi.as_view(),
         name="mental-model-refresh"),
    path("mental-models/<str:model_id>/update", views_models.MentalModelUpdateApi.as_view(),
         name="mental-model-update"),
    path("mental-models/<str:model_id>/revisions", views_models.MentalModelRevisionsApi.as_view(),
         name="mental-model-revisions"),
    path("mental-models/<str:model_id>/revisions/<int:number>", views_models.MentalModelRevisionApi.as_view(),
         name="mental-model-revision"),
    path("mental-models/<str:model_id>/diff", views_models.MentalModelDiffApi.as_view(), name="mental-model-diff"),
    path("mental-models/<str:model_id>/revert", views_models.MentalModelRevertApi.as_view(),
         name="mental-model-revert"),
    path("observations", views_live.ObservationsApi.as_view(), name="observations"),
    path("observations/invalidate", views_live.ObservationsInvalidateApi.as_view(), name="observations-invalidate"),
    path("observations/consolidate", views_live.ObservationsConsolidateApi.as_view(),
         name="observations-consolidate"),
    path("observations/<str:observation_id>", views_live.ObservationApi.as_view(), name="observation"),
    path("directives", views_live.DirectivesApi.as_view(), name="directives"),
    path("directives/<str:directive_id>", views_live.DirectiveApi.as_view(), name="directive"),
    path("directives/<str:directive_id>/deactivate", views_live.DirectiveDeactivateApi.as_view(),
         name="directive-deactivate"),
    path("banks", views_banks.BanksApi.as_view(), name="banks"),
    path("banks/<str:bank_id>", views_banks.BankApi.as_view(), name="bank"),
]
