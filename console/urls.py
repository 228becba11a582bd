"""The console's pages: what spans the apps (dashboard, health, users, settings) and the evaluation."""

from django.urls import path

from console import dashboard_views, settings_views, users_views, views
from console.settings_views import moved

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("dashboard/data/", dashboard_views.dashboard_data, name="dashboard_data"),
    path("dashboard/resync/", dashboard_views.mirror_resync, name="mirror_resync"),
    path("health/", views.health, name="health"),
    path("users/", users_views.users, name="users"),
    path("settings/", settings_views.account, name="settings"),
    path("settings/privacy/", settings_views.privacy_settings, name="privacy_settings"),
    path("settings/privacy/scan/", settings_views.secret_scan, name="secret_scan"),
    path("settings/data/", settings_views.data_settings, name="data_settings"),
    path("settings/data/export/", settings_views.data_export, name="data_export"),
    path("settings/data/import/", settings_views.data_import, name="data_import"),
    path("settings/api-keys/", settings_views.api_keys, name="api_keys"),
    path("settings/api-keys/<int:pk>/revoke/", settings_views.api_key_revoke_view, name="api_key_revoke"),
    # Where these pages were before they became the Settings page's tabs (issue 35): bookmarks keep working.
    path("api-keys/", moved("api_keys"), name="moved_api_keys"),
    path("api-keys/<int:pk>/revoke/", moved("api_key_revoke"), name="moved_api_key_revoke"),
    path("privacy/", moved("privacy_settings"), name="moved_privacy_settings"),
    path("privacy/scan/", moved("secret_scan"), name="moved_secret_scan"),
    path("data/export/", moved("data_export"), name="moved_data_export"),
    path("data/import/", moved("data_import"), name="moved_data_import"),
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
