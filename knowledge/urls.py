from django.urls import path

from knowledge import chunk_views, views

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
    path("<uuid:pk>/rechunk/", chunk_views.document_rechunk, name="document_rechunk"),
    path("<uuid:pk>/chunks/<uuid:chunk_pk>/", chunk_views.chunk_item, name="chunk_item"),
    path("<uuid:pk>/chunks/<uuid:chunk_pk>/edit/", chunk_views.chunk_edit, name="chunk_edit"),
    path("<uuid:pk>/chunks/<uuid:chunk_pk>/disable/", chunk_views.chunk_disable, name="chunk_disable"),
    path("<uuid:pk>/chunks/<uuid:chunk_pk>/enable/", chunk_views.chunk_enable, name="chunk_enable"),
]
