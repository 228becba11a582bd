from django.urls import path

from core import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("health/", views.health, name="health"),
    path("api-keys/", views.api_keys, name="api_keys"),
    path("api-keys/<int:pk>/revoke/", views.api_key_revoke_view, name="api_key_revoke"),
]
