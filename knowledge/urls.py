from django.urls import path

from knowledge import views

urlpatterns = [
    path("", views.library, name="library"),
    path("upload/", views.document_upload, name="document_upload"),
    path("search/", views.knowledge_search, name="knowledge_search"),
    path("ask/", views.knowledge_ask, name="knowledge_ask"),
    path("<uuid:pk>/", views.document_detail, name="document_detail"),
    path("<uuid:pk>/download/", views.document_download, name="document_download"),
    path("<uuid:pk>/row/", views.document_row, name="document_row"),
    path("<uuid:pk>/retry/", views.document_retry, name="document_retry"),
    path("<uuid:pk>/cancel/", views.document_cancel, name="document_cancel"),
    path("<uuid:pk>/delete/", views.document_delete, name="document_delete"),
]
