from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from banks.api import views_core, views_docs

urlpatterns = [
    path("v1/openapi.json", views_docs.openapi_json, name="openapi"),
    path("v1/docs", views_docs.api_docs, name="api-docs"),
    path("v1/", include("banks.api.urls")),
    path("v1/", include("portability.api.urls")),
    path("v1/", include("agents.api.urls")),
    path("live", views_core.LiveApi.as_view(), name="live"),
    path("health", views_core.HealthApi.as_view(), name="health"),
    path("health/live", views_core.LiveApi.as_view(), name="health-live"),
    path("health/ingest", views_core.IngestHealthApi.as_view(), name="health-ingest"),
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico whatever the page says; answer with the SVG icon.
    path("favicon.ico", RedirectView.as_view(url="/static/img/favicon.svg", permanent=True)),
    path("", include("portability.urls")),
    path("", include("curation.urls")),
]

handler404 = "memoryhub.views.not_found"
handler500 = "memoryhub.views.server_error"
handler403 = "memoryhub.views.permission_denied"
handler400 = "memoryhub.views.bad_request"
