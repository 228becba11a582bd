"""The project's URLs plus one view that raises, to see the 500 page the way a real failure reaches it."""

from django.urls import path

from config.urls import handler404, handler500
from config.urls import urlpatterns as project_urlpatterns

__all__ = ["handler404", "handler500", "urlpatterns"]


def explode(request):
    raise RuntimeError("a bug in a view")


urlpatterns = [path("explode/", explode), *project_urlpatterns]
