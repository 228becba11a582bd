"""Graph stores: one interface, two backends (SqlGraphStore over the Entity/Relation tables, Neo4jGraphStore).

core.stores.graph_store() picks one from the settings; the entity graph feature (memories.graph) mirrors rows
into it and reads neighbourhoods from it.
"""

from core.graphstore.base import (
    EntityNode,
    GraphStore,
    GraphStoreError,
    GraphStoreUnavailable,
    Neighbor,
    RelationEdge,
)

__all__ = ["EntityNode", "GraphStore", "GraphStoreError", "GraphStoreUnavailable", "Neighbor", "RelationEdge"]
