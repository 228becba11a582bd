from core.graphstore.base import (
    EntityNode,
    GraphStore,
    GraphStoreError,
    GraphStoreUnavailable,
    Neighbor,
    RelationEdge,
)

__all__ = ["EntityNode", "GraphStore", "GraphStoreError", "GraphStoreUnavailable", "Neighbor", "RelationEdge"]
