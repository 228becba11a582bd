from django.urls import path

from memories import authoring_views, bulk_views, review_views, views

urlpatterns = [
    path("", views.memory_list, name="memory_list"),
    path("bulk-delete/", views.memories_bulk_delete, name="memories_bulk_delete"),
    path("bulk/", bulk_views.memories_bulk, name="memories_bulk"),
    path("bulk/undo/", bulk_views.memories_bulk_undo, name="memories_bulk_undo"),
    path("forget/", views.memories_forget, name="memories_forget"),
    path("review/", review_views.review, name="memory_review"),
    path("review/find/", review_views.review_find, name="memory_review_find"),
    path("review/bulk/", review_views.review_bulk, name="memory_review_bulk"),
    path("review/<int:pk>/<str:decision>/", review_views.review_decide, name="memory_review_decide"),
    path("sessions/", views.session_list, name="session_list"),
    path("sessions/<uuid:pk>/", views.session_detail, name="session_detail"),
    path("<uuid:pk>/", views.memory_detail, name="memory_detail"),
    path("<uuid:pk>/row/", views.memory_row, name="memory_row"),
    path("<uuid:pk>/edit/", views.memory_edit, name="memory_edit"),
    path("<uuid:pk>/archive/", views.memory_archive, name="memory_archive"),
    path("<uuid:pk>/restore/", views.memory_restore, name="memory_restore"),
    path("<uuid:pk>/reinstate/", views.memory_reinstate, name="memory_reinstate"),
    path("<uuid:pk>/delete/", views.memory_delete, name="memory_delete"),
    # Authoring: add, the file of a perceptual memory, restore a version (memories.authoring_views).
    path("add/", authoring_views.memory_add, name="memory_add"),
    path("<uuid:pk>/file/", authoring_views.memory_file, name="memory_file"),
    path("<uuid:pk>/image/", authoring_views.memory_image, name="memory_image"),
    path(
        "<uuid:pk>/history/<int:edit_pk>/restore/",
        authoring_views.memory_restore_version,
        name="memory_restore_version",
    ),
]
