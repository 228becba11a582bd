"""The entity graph feature: its services (service.py), JSON API (api.py) and explorer pages (views.py, urls.py).

The storage backends the services write through are core.graphstore's. Callers import the services from here.
"""

from memories.graph.service import (
    RELATION_FIELDS,
    Editor,
    GraphRequestError,
    entity_delete,
    entity_history,
    entity_merge,
    entity_update,
    mirror_entity,
    mirror_relation,
    neighbourhood,
    neighbours_of,
    relation_delete,
    relation_update,
    relations_among,
    top_entities,
)

__all__ = [
    "RELATION_FIELDS",
    "Editor",
    "GraphRequestError",
    "entity_delete",
    "entity_history",
    "entity_merge",
    "entity_update",
    "mirror_entity",
    "mirror_relation",
    "neighbourhood",
    "neighbours_of",
    "relation_delete",
    "relation_update",
    "relations_among",
    "top_entities",
]
