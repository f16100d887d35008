from django.urls import path

from portability.api import views

app_name = "v1-portability"

urlpatterns = [
    path("export", views.ExportApi.as_view(), name="export"),
    path("import", views.ImportApi.as_view(), name="import"),
    path("jobs/<int:job_id>", views.JobApi.as_view(), name="job"),
    path("jobs/<int:job_id>/cancel", views.JobCancelApi.as_view(), name="job-cancel"),
    path("jobs/<int:job_id>/resume", views.JobResumeApi.as_view(), name="job-resume"),
    path("banks/<str:bank_id>/reextract-entities", views.ReextractEntitiesApi.as_view(), name="reextract-entities"),
]
