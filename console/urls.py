"""The console's pages: what spans the apps (dashboard, health, API keys, your data) and the evaluation."""

from django.urls import path

from console import dashboard_views, users_views, views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("dashboard/data/", dashboard_views.dashboard_data, name="dashboard_data"),
    path("dashboard/resync/", dashboard_views.mirror_resync, name="mirror_resync"),
    path("health/", views.health, name="health"),
    path("users/", users_views.users, name="users"),
    path("api-keys/", views.api_keys, name="api_keys"),
    path("api-keys/<int:pk>/revoke/", views.api_key_revoke_view, name="api_key_revoke"),
    path("privacy/", views.privacy_settings, name="privacy_settings"),
    path("privacy/scan/", views.secret_scan, name="secret_scan"),
    path("data/export/", views.data_export, name="data_export"),
    path("data/import/", views.data_import, name="data_import"),
    path("evaluation/", views.evaluation_page, name="evaluation"),
    path("evaluation/questions/", views.question_add, name="evaluation_question_add"),
    path("evaluation/questions/<int:pk>/row/", views.question_row, name="evaluation_question_row"),
    path("evaluation/questions/<int:pk>/edit/", views.question_edit, name="evaluation_question_edit"),
    path("evaluation/questions/<int:pk>/delete/", views.question_delete, name="evaluation_question_delete"),
    path("evaluation/pick/", views.answer_picker, name="evaluation_answer_picker"),
    path("evaluation/answers/", views.answer_mark, name="evaluation_answer_mark"),
    path("evaluation/runs/", views.run_create, name="evaluation_run_create"),
    path("evaluation/runs/<int:pk>/", views.run_detail, name="evaluation_run"),
]
