from django.urls import path

from agents.api import views

app_name = "v1-agents"

urlpatterns = [
    path("agent/tools", views.ToolListApi.as_view(), name="tools"),
    path("agent/<str:name>", views.ToolApi.as_view(), name="tool"),
    path("ingest/turn", views.IngestTurnApi.as_view(), name="ingest-turn"),
]
