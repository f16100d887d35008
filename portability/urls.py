from django.urls import path

from portability import views

app_name = "portability"

urlpatterns = [
    path("banks/<str:bank_id>/transfer/", views.transfer, name="transfer"),
    path("banks/<str:bank_id>/transfer/upload", views.upload, name="upload"),
    path("banks/<str:bank_id>/transfer/start", views.start, name="start"),
    path("banks/<str:bank_id>/transfer/download", views.download, name="download"),
    path("banks/<str:bank_id>/jobs/<int:job_id>/", views.job_detail, name="job"),
    path("banks/<str:bank_id>/jobs/<int:job_id>/cancel", views.job_cancel, name="job-cancel"),
    path("banks/<str:bank_id>/jobs/<int:job_id>/resume", views.job_resume_view, name="job-resume"),
]
