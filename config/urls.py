from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from django.views.i18n import JavaScriptCatalog

from config.api import api
from core.forms import AdminSignInForm
from core.views import SignInView, favicon

admin.site.login_form = AdminSignInForm
handler400 = "core.views.bad_request"
handler404 = "core.views.not_found"
handler500 = "core.views.server_error"

urlpatterns = [
    path("", include("console.urls")),
    path("memories/", include("memories.urls")),
    path("graph/", include("memories.graph.urls")),
    path("knowledge/", include("knowledge.urls")),
    path("", include("agents.urls")),
    path("favicon.ico", favicon, name="favicon"),
    path("login/", SignInView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Sessions and chat messages were agents' models until issue 13, then memories' until issue 34: their old admin
    # addresses still lead to them.
    re_path(
        r"^admin/(?:agents|memories)/(?P<rest>(?:agentsession|chatmessage)(?:/.*)?)$",
        RedirectView.as_view(url="/admin/conversations/%(rest)s", query_string=True),
    ),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    # The words static/js shows, from locale/*/LC_MESSAGES/djangojs.po; base.html loads it before any script.
    path("i18n/js/", JavaScriptCatalog.as_view(), name="javascript-catalog"),
]
