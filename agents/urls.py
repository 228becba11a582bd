from django.urls import path

from agents import openai_api, views

urlpatterns = [
    path("chat/", views.chat, name="chat"),
    path("v1/models", openai_api.models, name="openai_models"),
    path("v1/chat/completions", openai_api.chat_completions, name="openai_chat_completions"),
]
