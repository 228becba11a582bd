"""The default graph store: the Entity and Relation tables are the graph, walked hop by hop in SQL."""

from django.db import connection
from django.db.models import Q

from core.graph.base import EntityNode, GraphStore, Neighbor, RelationEdge, check_depth


class SqlGraphStore(GraphStore):
    backend = "sql"

    # The tables are the source of truth, so there is nothing to mirror.
    def ensure_schema(self) -> None:
        pass

    def upsert_entity(self, entity: EntityNode) -> None:
        pass

    def upsert_relation(self, relation: RelationEdge) -> None:
        pass

    def delete_entity(self, entity_id: str) -> None:
        pass

    def delete_relation(self, relation_id: str) -> None:
        pass

    def delete_user(self, user_id: str) -> None:
        pass

    def neighbors(
        self, user_id: str, entity_ids: list[str], depth: int = 1, limit: int = 300
    ) -> list[Neighbor]:
        from memories.models import Relation

        check_depth(depth)
        seen = {str(entity_id) for entity_id in entity_ids}
        frontier = set(seen)
        found: list[Neighbor] = []
        for distance in range(1, depth + 1):
            if not frontier or len(found) >= limit:
                break
            edges = Relation.objects.filter(user_id=user_id).filter(
                Q(source_id__in=frontier) | Q(target_id__in=frontier)
            )
            reached = set()
            for source_id, target_id in edges.values_list("source_id", "target_id"):
                reached.update({str(source_id), str(target_id)})
            frontier = reached - seen
            seen |= frontier
            found.extend(Neighbor(entity_id, distance) for entity_id in sorted(frontier))
        return found[:limit]

    def ping(self) -> str:
        connection.ensure_connection()
        return f"SQL over the Entity/Relation tables ({connection.vendor})"
