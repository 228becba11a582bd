from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from config.api import api
from core.forms import AdminSignInForm
from core.views import SignInView, favicon
from memories import graph_views

admin.site.login_form = AdminSignInForm
handler404 = "core.views.not_found"
handler500 = "core.views.server_error"

urlpatterns = [
    path("", include("console.urls")),
    path("memories/", include("memories.urls")),
    path("graph/", graph_views.graph_page, name="graph"),
    path("graph/data/", graph_views.graph_data, name="graph_data"),
    path("graph/entities/<uuid:pk>/neighbors/", graph_views.entity_neighbors, name="graph_entity_neighbors"),
    path("graph/entities/<uuid:pk>/memories/", graph_views.entity_memories, name="graph_entity_memories"),
    path("graph/entities/<uuid:pk>/edit/", graph_views.entity_edit, name="graph_entity_edit"),
    path("graph/entities/<uuid:pk>/merge/", graph_views.entity_merge, name="graph_entity_merge"),
    path("graph/entities/<uuid:pk>/delete/", graph_views.entity_delete, name="graph_entity_delete"),
    path("graph/relations/<uuid:pk>/edit/", graph_views.relation_edit, name="graph_relation_edit"),
    path("graph/relations/<uuid:pk>/delete/", graph_views.relation_delete, name="graph_relation_delete"),
    path(
        "graph/relations/<uuid:pk>/memories/", graph_views.relation_memories, name="graph_relation_memories"
    ),
    path("knowledge/", include("knowledge.urls")),
    path("", include("agents.urls")),
    path("favicon.ico", favicon, name="favicon"),
    path("login/", SignInView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
]
