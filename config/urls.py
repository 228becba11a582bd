from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from config.api import api
from memories import views as memory_views

urlpatterns = [
    path("", include("core.urls")),
    path("memories/", include("memories.urls")),
    path("graph/", memory_views.graph, name="graph"),
    path("knowledge/", include("knowledge.urls")),
    path("", include("agents.urls")),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
]
