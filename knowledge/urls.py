from django.urls import path

from knowledge import views

urlpatterns = [
    path("", views.library, name="library"),
]
