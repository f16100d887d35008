from django.urls import path

from banks.api import views_core

app_name = "v1"

urlpatterns = [
    path("retain", views_core.RetainApi.as_view(), name="retain"),
    path("recall", views_core.RecallApi.as_view(), name="recall"),
    path("history", views_core.HistoryApi.as_view(), name="history"),
    path("forget", views_core.ForgetApi.as_view(), name="forget"),
]
