from django.urls import path

from memories.graph import views

urlpatterns = [
    path("", views.graph_page, name="graph"),
    path("data/", views.graph_data, name="graph_data"),
    path("entities/<uuid:pk>/neighbors/", views.entity_neighbors, name="graph_entity_neighbors"),
    path("entities/<uuid:pk>/memories/", views.entity_memories, name="graph_entity_memories"),
    path("entities/<uuid:pk>/edit/", views.entity_edit, name="graph_entity_edit"),
    path("entities/<uuid:pk>/merge/", views.entity_merge, name="graph_entity_merge"),
    path("entities/<uuid:pk>/delete/", views.entity_delete, name="graph_entity_delete"),
    path("relations/<uuid:pk>/edit/", views.relation_edit, name="graph_relation_edit"),
    path("relations/<uuid:pk>/delete/", views.relation_delete, name="graph_relation_delete"),
    path("relations/<uuid:pk>/memories/", views.relation_memories, name="graph_relation_memories"),
]
