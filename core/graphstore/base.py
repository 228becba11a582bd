"""The graph store interface: entity/relation mirrors and neighbourhood queries, always scoped to one user."""

from abc import ABC, abstractmethod
from dataclasses import dataclass

MAX_DEPTH = 3


class GraphStoreError(Exception):
    """The graph store failed; str(e) is a readable message naming the setting to check."""


class GraphStoreUnavailable(GraphStoreError):
    pass


@dataclass(frozen=True)
class EntityNode:
    id: str
    user_id: str
    name: str
    key: str
    entity_type: str
    frequency: int = 1


@dataclass(frozen=True)
class RelationEdge:
    id: str
    user_id: str
    source_id: str
    target_id: str
    relation_type: str
    strength: float = 0.5
    frequency: int = 1


@dataclass(frozen=True)
class Neighbor:
    entity_id: str
    distance: int  # hops from the nearest start entity


def check_depth(depth: int) -> int:
    if not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be between 1 and {MAX_DEPTH}, got {depth}")
    return depth


class GraphStore(ABC):
    backend: str

    @abstractmethod
    def ensure_schema(self) -> None: ...

    @abstractmethod
    def upsert_entity(self, entity: EntityNode) -> None: ...

    @abstractmethod
    def upsert_relation(self, relation: RelationEdge) -> None: ...

    @abstractmethod
    def delete_entity(self, entity_id: str) -> None: ...

    @abstractmethod
    def delete_relation(self, relation_id: str) -> None: ...

    @abstractmethod
    def delete_user(self, user_id: str) -> None: ...

    @abstractmethod
    def neighbors(
        self, user_id: str, entity_ids: list[str], depth: int = 1, limit: int = 300
    ) -> list[Neighbor]:
        """Entities within `depth` hops of any start entity (start entities excluded), nearest first."""

    @abstractmethod
    def ping(self) -> str: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        pass
