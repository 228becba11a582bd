"""The default graph store: the Entity and Relation tables are the graph, walked hop by hop in SQL."""

from typing import ClassVar, cast

from django.db import connection
from django.db.models import ForeignKey, Model

from core.graphstore.base import EntityNode, GraphStore, GraphStoreError, Neighbor, RelationEdge, check_depth
from core.queries import uuid_text


class SqlGraphStore(GraphStore):
    backend = "sql"
    # core sits below the apps whose tables it reads and names none of them: the app that owns the relations hands
    # its model over when it loads (memories' AppConfig.ready calls read_relations_from).
    relation_model: ClassVar[type[Model] | None] = None

    @classmethod
    def read_relations_from(cls, model: type[Model]) -> None:
        cls.relation_model = model

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
        check_depth(depth)
        Relation = self.relation_model
        if Relation is None:
            raise GraphStoreError("the SQL graph has no relation table: no app called read_relations_from")
        quote = connection.ops.quote_name
        table = quote(Relation._meta.db_table)
        # The cast: get_field may also answer a reverse relation; these three are the model's foreign keys.
        keys = {
            name: cast("ForeignKey", Relation._meta.get_field(name)) for name in ("user", "source", "target")
        }
        user, source, target = (quote(keys[name].column) for name in ("user", "source", "target"))
        # Ids travel as the database stores them (32 hex digits on SQLite, a UUID on PostgreSQL): a hop from a
        # speaker's name reaches hundreds of entities, and Django's per-value UUID conversion of the next
        # hop's IN list, there and back, cost more than the queries themselves.
        owner = keys["user"].target_field.get_db_prep_value(user_id, connection)
        entity_key = keys["source"].target_field
        seen = {entity_key.get_db_prep_value(entity_id, connection) for entity_id in entity_ids}
        # The frontier by its ids' text: the sort key and each Neighbor's id, formatted once per entity.
        frontier = {uuid_text(entity_id): entity_id for entity_id in seen}
        found: list[Neighbor] = []
        with connection.cursor() as cursor:
            for distance in range(1, depth + 1):
                if not frontier or len(found) >= limit:
                    break
                # Two index-only lookups, (user, source, target) and (user, target, source): SQLite does not
                # split `source IN … OR target IN …` over two indexes and read every relation of the user
                # instead (depth 2 at 30,000 relations: 18 ms p50, now ~1 ms; bench/results/graph.md). UNION,
                # not UNION ALL: a hub's relations name the same entities hundreds of times.
                ids = [frontier[text] for text in sorted(frontier)]
                marks = ", ".join(["%s"] * len(ids))
                cursor.execute(
                    f"SELECT {target} FROM {table} WHERE {user} = %s AND {source} IN ({marks}) "  # noqa: S608
                    f"UNION SELECT {source} FROM {table} WHERE {user} = %s AND {target} IN ({marks})",
                    [owner, *ids, owner, *ids],
                )
                reached = {entity_id for (entity_id,) in cursor.fetchall()} - seen
                seen |= reached
                frontier = {uuid_text(entity_id): entity_id for entity_id in reached}
                found.extend(Neighbor(text, distance) for text in sorted(frontier))
        return found[:limit]

    def ping(self) -> str:
        connection.ensure_connection()
        return f"SQL over the Entity/Relation tables ({connection.vendor})"
