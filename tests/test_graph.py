"""The graph store: the SQL store always; the Neo4j store against a real server when NEO4J_URI is set."""

import os
import uuid

import pytest

from core.graphstore import EntityNode, GraphStoreUnavailable, Neighbor, RelationEdge
from core.graphstore.sql import SqlGraphStore
from memories.models import Entity, Relation


@pytest.fixture
def chain(user, other_user):
    """张三 - Python - 李四 - React for one user, and a link from 李四's twin for another user."""
    names = ["张三", "Python", "李四", "React"]
    entities = [Entity.objects.create(user=user, name=n, key=n.lower()) for n in names]
    for source, target in zip(entities, entities[1:], strict=False):
        Relation.objects.create(user=user, source=source, target=target, relation_type="RELATED_TO")
    theirs = [Entity.objects.create(user=other_user, name=n, key=n.lower()) for n in ("李四", "Secret")]
    Relation.objects.create(user=other_user, source=theirs[0], target=theirs[1])
    return {e.name: str(e.pk) for e in entities}


@pytest.mark.django_db
def test_sql_neighbors_by_depth(user, chain):
    store = SqlGraphStore()
    one_hop = store.neighbors(str(user.pk), [chain["张三"]], depth=1)
    assert one_hop == [Neighbor(chain["Python"], 1)]
    two_hops = store.neighbors(str(user.pk), [chain["张三"]], depth=2)
    assert two_hops == [Neighbor(chain["Python"], 1), Neighbor(chain["李四"], 2)]
    three = {n.entity_id: n.distance for n in store.neighbors(str(user.pk), [chain["张三"]], depth=3)}
    assert three == {chain["Python"]: 1, chain["李四"]: 2, chain["React"]: 3}


@pytest.mark.django_db
def test_sql_neighbors_never_cross_users(user, other_user, chain):
    store = SqlGraphStore()
    assert store.neighbors(str(other_user.pk), [chain["李四"]], depth=3) == []
    reached = {n.entity_id for n in store.neighbors(str(user.pk), [chain["李四"]], depth=3)}
    assert reached == {chain["Python"], chain["React"], chain["张三"]}


@pytest.mark.django_db
def test_depth_is_bounded(user, chain):
    with pytest.raises(ValueError, match="depth must be between 1 and 3"):
        SqlGraphStore().neighbors(str(user.pk), [chain["张三"]], depth=4)


@pytest.mark.django_db
def test_sql_store_reports_its_backend():
    assert "SQL over the Entity/Relation tables" in SqlGraphStore().ping()


def test_an_unreachable_neo4j_names_neo4j_uri():
    from core.graphstore.neo4j import Neo4jGraphStore

    store = Neo4jGraphStore("bolt://127.0.0.1:9", password="x")
    with pytest.raises(GraphStoreUnavailable, match="NEO4J_URI=bolt://127.0.0.1:9"):
        store.ping()
    store.close()


@pytest.mark.neo4j
class TestNeo4jStore:
    @pytest.fixture
    def store(self, neo4j_uri):
        from core.graphstore.neo4j import Neo4jGraphStore

        store = Neo4jGraphStore(
            neo4j_uri, os.environ.get("NEO4J_USERNAME", "neo4j"), os.environ.get("NEO4J_PASSWORD", "")
        )
        store.ensure_schema()
        self.users = [f"test-{uuid.uuid4()}", f"test-{uuid.uuid4()}"]
        yield store
        for user_id in self.users:
            store.delete_user(user_id)
        store.close()

    def _chain(self, store, user_id, names):
        ids = [str(uuid.uuid4()) for _ in names]
        for entity_id, name in zip(ids, names, strict=True):
            store.upsert_entity(EntityNode(entity_id, user_id, name, name.lower(), "CONCEPT"))
        for source, target in zip(ids, ids[1:], strict=False):
            store.upsert_relation(RelationEdge(str(uuid.uuid4()), user_id, source, target, "RELATED_TO"))
        return ids

    def test_neighbors_match_the_sql_semantics(self, store):
        ids = self._chain(store, self.users[0], ["张三", "Python", "李四", "React"])
        assert store.neighbors(self.users[0], [ids[0]], depth=1) == [Neighbor(ids[1], 1)]
        assert {n.entity_id: n.distance for n in store.neighbors(self.users[0], [ids[0]], depth=3)} == {
            ids[1]: 1,
            ids[2]: 2,
            ids[3]: 3,
        }

    def test_upserts_are_idempotent(self, store):
        ids = self._chain(store, self.users[0], ["a", "b"])
        store.upsert_entity(EntityNode(ids[0], self.users[0], "a", "a", "CONCEPT", frequency=5))
        records = store._run("MATCH (e:Entity {id: $id}) RETURN count(e) AS n, e.frequency AS f", id=ids[0])
        assert (records[0]["n"], records[0]["f"]) == (1, 5)

    def test_users_never_see_each_other(self, store):
        mine = self._chain(store, self.users[0], ["x", "y"])
        assert store.neighbors(self.users[1], [mine[0]], depth=2) == []

    def test_deletes_are_mirrored(self, store):
        ids = self._chain(store, self.users[0], ["p", "q", "r"])
        store.delete_entity(ids[1])
        assert store.neighbors(self.users[0], [ids[0]], depth=3) == []


@pytest.mark.django_db
def test_with_neo4j_down_search_and_neighbours_answer_from_the_database_with_a_notice(
    api, settings, user, dead_port, caplog, short_graph_waits
):
    from core import stores

    def fallbacks() -> int:
        """Reads that tried the dead server and fell back (the breaker skips it afterwards, and logs nothing)."""
        return sum("graph reads fall back to SQL" in record.getMessage() for record in caplog.records)

    for content in ("李四是前端工程师，擅长React", "张三在北京工作", "李四喜欢周末爬山"):
        api("post", "/memories/", {"content": content, "memory_type": "semantic"})
    settings.NEO4J_URI = f"bolt://127.0.0.1:{dead_port}"
    stores.reset(embeddings=False)
    try:
        with caplog.at_level("WARNING", logger="core.stores"):
            response = api("post", "/memories/search", {"query": "李四擅长什么？"})
        assert response.status_code == 200
        assert fallbacks() == 1 and stores.graph_breaker.remaining() > 0
        body = response.json()
        assert "graph server is unreachable" in body["notice"]
        assert any(hit["scores"]["graph"] > 0 for hit in body["results"])  # the links still count
        # The breaker: no second wait on the dead server (counted in tries, not timed).
        with caplog.at_level("WARNING", logger="core.stores"):
            assert api("post", "/memories/search", {"query": "李四住哪？"}).status_code == 200
            entity = Entity.objects.get(user=user, name="李四")
            assert api("get", f"/entities/{entity.pk}/neighbors").status_code == 200
        assert fallbacks() == 1
    finally:
        stores.reset(embeddings=False)
