from django.urls import path

from agents import mcp_view, openai_api, views

urlpatterns = [
    path("chat/", views.chat, name="chat"),
    path("chat/new/", views.chat_new, name="chat_new"),
    path("chat/<uuid:pk>/", views.chat_session, name="chat_session"),
    path("chat/<uuid:pk>/send/", views.chat_send, name="chat_send"),
    path("chat/<uuid:pk>/stream/", views.chat_stream, name="chat_stream"),
    path("chat/<uuid:pk>/end/", views.chat_end, name="chat_end"),
    path(
        "chat/<uuid:pk>/messages/<uuid:message_pk>/undo/<uuid:memory_pk>/",
        views.chat_undo,
        name="chat_undo",
    ),
    path("v1/models", openai_api.models, name="openai_models"),
    path("v1/chat/completions", openai_api.chat_completions, name="openai_chat_completions"),
    path("mcp", mcp_view.mcp_endpoint, name="mcp"),
]
