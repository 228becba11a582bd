"""The Neo4j mirror of Entity/Relation rows, through the official driver.

Every query is parametrised and carries the user id; node and relationship ids are the Django UUIDs, so MERGE
makes every write idempotent. Relationship types cannot be parameters in Cypher, so all edges share the REL
type and keep their kind in a `type` property.
"""

from neo4j import GraphDatabase
from neo4j.exceptions import AuthError, Neo4jError, ServiceUnavailable

from core.cpu_slots import waiting_elsewhere
from core.graphstore.base import (
    EntityNode,
    GraphStore,
    GraphStoreError,
    GraphStoreUnavailable,
    Neighbor,
    RelationEdge,
    check_depth,
)

SCHEMA = [
    "CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE",
    "CREATE CONSTRAINT rel_id IF NOT EXISTS FOR ()-[r:REL]-() REQUIRE r.id IS UNIQUE",
    "CREATE INDEX entity_user IF NOT EXISTS FOR (e:Entity) ON (e.user_id)",
]


# Seconds, not the driver's minutes: core.stores.read_graph falls back to SQL when a wait runs out.
WAIT_SECONDS = 3.0


class Neo4jGraphStore(GraphStore):
    backend = "neo4j"

    def __init__(
        self,
        uri: str,
        username: str = "neo4j",
        password: str = "",
        database: str = "neo4j",
        timeout: float | None = None,
    ):
        auth = (username, password) if password else None
        wait = WAIT_SECONDS if timeout is None else timeout
        self.uri = uri
        self.database = database
        self.driver = GraphDatabase.driver(
            uri,
            auth=auth,
            connection_timeout=wait,
            connection_acquisition_timeout=wait,  # includes the Bolt handshake a hanging server never answers
            max_transaction_retry_time=wait,
        )
        self._schema_ready = False

    def _run(self, query: str, **params):
        if not self._schema_ready and not query.startswith("CREATE "):
            # Constraints first, once per process: MERGE on ids relies on them being unique.
            self.ensure_schema()
        try:
            with waiting_elsewhere():  # the thread's CPU slot serves another while the server answers
                return self.driver.execute_query(query, params, database_=self.database).records
        except AuthError as exc:
            raise GraphStoreUnavailable(
                f"Neo4j at {self.uri} refused the credentials: check NEO4J_USERNAME/NEO4J_PASSWORD ({exc.message})"
            ) from exc
        except (ServiceUnavailable, OSError) as exc:
            raise GraphStoreUnavailable(f"Neo4j is not reachable at NEO4J_URI={self.uri}: {exc}") from exc
        except Neo4jError as exc:
            raise GraphStoreError(f"Neo4j query failed: {exc.message}") from exc

    def ensure_schema(self) -> None:
        for statement in SCHEMA:
            self._run(statement)
        self._schema_ready = True

    def upsert_entity(self, entity: EntityNode) -> None:
        self._run(
            "MERGE (e:Entity {id: $id}) "
            "SET e.user_id = $user_id, e.name = $name, e.key = $key, e.type = $type, e.frequency = $frequency",
            id=entity.id,
            user_id=entity.user_id,
            name=entity.name,
            key=entity.key,
            type=entity.entity_type,
            frequency=entity.frequency,
        )

    def upsert_relation(self, relation: RelationEdge) -> None:
        # A relation whose endpoints are not mirrored yet creates them as bare nodes; their own
        # upsert fills in the properties later, whatever order the tasks run in.
        self._run(
            # A relation whose endpoints changed (an entity merge) is replaced, not duplicated.
            "OPTIONAL MATCH (x)-[old:REL {id: $id}]->(y) WHERE x.id <> $source_id OR y.id <> $target_id "
            "DELETE old WITH 1 AS _ "
            "MERGE (a:Entity {id: $source_id}) ON CREATE SET a.user_id = $user_id "
            "MERGE (b:Entity {id: $target_id}) ON CREATE SET b.user_id = $user_id "
            "MERGE (a)-[r:REL {id: $id}]->(b) "
            "SET r.user_id = $user_id, r.type = $type, r.strength = $strength, r.frequency = $frequency",
            id=relation.id,
            user_id=relation.user_id,
            source_id=relation.source_id,
            target_id=relation.target_id,
            type=relation.relation_type,
            strength=relation.strength,
            frequency=relation.frequency,
        )

    def delete_entity(self, entity_id: str) -> None:
        self._run("MATCH (e:Entity {id: $id}) DETACH DELETE e", id=entity_id)

    def delete_relation(self, relation_id: str) -> None:
        self._run("MATCH ()-[r:REL {id: $id}]-() DELETE r", id=relation_id)

    def delete_user(self, user_id: str) -> None:
        self._run("MATCH (e:Entity {user_id: $user_id}) DETACH DELETE e", user_id=user_id)

    def neighbors(
        self, user_id: str, entity_ids: list[str], depth: int = 1, limit: int = 300
    ) -> list[Neighbor]:
        # Variable-length bounds cannot be parameters; check_depth makes the interpolated value a small int.
        hops = check_depth(depth)
        records = self._run(
            f"MATCH (s:Entity {{user_id: $user_id}}) WHERE s.id IN $ids "
            f"MATCH p = (s)-[:REL*1..{hops}]-(n:Entity {{user_id: $user_id}}) "
            "WHERE NOT n.id IN $ids AND all(r IN relationships(p) WHERE r.user_id = $user_id) "
            "RETURN n.id AS id, min(length(p)) AS distance ORDER BY distance, id LIMIT $limit",
            user_id=user_id,
            ids=[str(entity_id) for entity_id in entity_ids],
            limit=limit,
        )
        return [Neighbor(record["id"], record["distance"]) for record in records]

    def ping(self) -> str:
        try:
            self.driver.verify_connectivity()
            info = self.driver.get_server_info()
        except AuthError as exc:
            raise GraphStoreUnavailable(
                f"Neo4j at {self.uri} refused the credentials: check NEO4J_USERNAME/NEO4J_PASSWORD"
            ) from exc
        except (ServiceUnavailable, OSError, ValueError) as exc:
            raise GraphStoreUnavailable(f"Neo4j is not reachable at NEO4J_URI={self.uri}: {exc}") from exc
        return f"Neo4j {info.agent} at {self.uri}"

    def close(self) -> None:
        self.driver.close()
