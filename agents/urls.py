from django.urls import path

from agents import views

urlpatterns = [
    path("chat/", views.chat, name="chat"),
]
