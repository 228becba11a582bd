from django.urls import path

from memories import views

urlpatterns = [
    path("", views.memory_list, name="memory_list"),
]
