"""The graph explorer: the page, its JSON (top entities, neighbours by depth, the node cap) and the side panel."""

import json
import re
import uuid

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memories.graph import views as graph_views
from memories.graph.views import MAX_NODES
from memories.models import Entity, EntityType, GraphEdit, Memory, MemoryEntity, Relation

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "graph-panel"}
XSS = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def entity(user, name: str, entity_type: str = EntityType.PERSON, frequency: int = 1) -> Entity:
    return Entity.objects.create(
        user=user, name=name, key=name.casefold(), entity_type=entity_type, frequency=frequency
    )


def relate(user, source: Entity, target: Entity, relation_type="RELATED_TO", **fields) -> Relation:
    return Relation.objects.create(
        user=user, source=source, target=target, relation_type=relation_type, **fields
    )


def memory(user, content: str, *entities: Entity, **fields) -> Memory:
    """A memory naming `entities`, without services: no extraction, no mirror."""
    [row] = Memory.objects.bulk_create(
        [Memory(user=user, content=content, memory_type="semantic", created_at=timezone.now(), **fields)]
    )
    MemoryEntity.objects.bulk_create([MemoryEntity(memory=row, entity=e, mention=e.name) for e in entities])
    return row


@pytest.fixture
def team(user):
    """张三 -WORKS_WITH-> 李四 -SKILLED_IN-> React -USED_BY-> Acme: a chain to walk by depth."""
    zhang = entity(user, "张三", frequency=5)
    li = entity(user, "李四", frequency=4)
    react = entity(user, "React", EntityType.PRODUCT, frequency=3)
    acme = entity(user, "Acme", EntityType.ORG, frequency=2)
    return {
        "zhang": zhang,
        "li": li,
        "react": react,
        "acme": acme,
        "zhang_li": relate(user, zhang, li, "WORKS_WITH", strength=0.9, frequency=3),
        "li_react": relate(user, li, react, "SKILLED_IN", strength=0.7),
        "react_acme": relate(user, react, acme, "USED_BY", strength=0.4),
    }


def data(client: Client, query: str = ""):
    return client.get(reverse("graph_data") + query)


def neighbors(client: Client, target: Entity, query: str = ""):
    return client.get(reverse("graph_entity_neighbors", args=[target.pk]) + query)


# --- the page ------------------------------------------------------------------------------------------------


def test_page_has_the_controls_canvas_legend_and_nonced_scripts(logged_in, user, team):
    response = logged_in.get(reverse("graph"))
    assert response.status_code == 200
    html = response.text
    nonce = re.search(r"'nonce-([^']+)'", response["Content-Security-Policy"]).group(1)
    assert re.search(
        rf'<script src="/static/vendor/cytoscape/cytoscape\.min\.js" defer nonce="{nonce}">', html
    )
    assert re.search(rf'<script src="/static/js/graph\.js" defer nonce="{nonce}">', html)
    for tag in re.findall(r"<script[^>]*>", html):
        assert f'nonce="{nonce}"' in tag
    assert " style=" not in html  # style-src 'self': no inline style attributes
    assert '<input type="search" name="q" id="graph-q"' in html
    assert 'data-data-url="/graph/data/"' in html
    assert 'data-neighbors-url="/graph/entities/00000000-0000-0000-0000-000000000000/neighbors/"' in html
    assert f'data-max-nodes="{MAX_NODES}"' in html
    for value, label in EntityType.choices:
        assert f'<option value="{value}">{label}</option>' in html
        assert (
            f'data-type="{value}" aria-pressed="true"><span class="swatch entity-type-{value}"></span>{label}'
            in html
        )
    assert [f'<option value="{n}"' in html for n in "123"] == [True, True, True]
    assert 'id="graph-panel"' in html
    assert "Add semantic memories to grow the graph" not in html


def test_page_keeps_the_filters_from_the_query_string(logged_in, user, team):
    html = logged_in.get(reverse("graph") + "?q=%E6%9D%8E&type=ORG&depth=2").text
    assert 'name="q" id="graph-q" value="李"' in html
    assert '<option value="ORG" selected>organisation</option>' in html
    assert '<option value="2" selected>2 hops</option>' in html


def test_page_without_entities_shows_the_empty_state(logged_in, user, other_user):
    entity(other_user, "Mallory")
    response = logged_in.get(reverse("graph"))
    assert response.status_code == 200
    assert "Add semantic memories to grow the graph" in response.text
    assert 'id="graph-canvas"' not in response.text
    assert "cytoscape" not in response.text


def test_everything_needs_a_login(client, user, team):
    login = reverse("login")
    assert client.get(reverse("graph"))["Location"] == f"{login}?next=/graph/"
    for response in (data(client), neighbors(client, team["li"])):
        assert response.status_code == 401
        assert response.json() == {"detail": "Log in to see the graph."}
    for name, pk in [
        ("graph_entity_memories", team["li"].pk),
        ("graph_relation_memories", team["zhang_li"].pk),
    ]:
        response = client.get(reverse(name, args=[pk]), **HTMX)
        assert response.status_code == 302
        assert response["Location"].startswith(f"{login}?next=/graph/")


def test_endpoints_only_answer_get(logged_in, team):
    assert logged_in.post(reverse("graph")).status_code == 405
    assert logged_in.post(reverse("graph_data")).status_code == 405
    assert logged_in.post(reverse("graph_entity_neighbors", args=[team["li"].pk])).status_code == 405
    assert logged_in.post(reverse("graph_entity_memories", args=[team["li"].pk])).status_code == 405
    assert logged_in.post(reverse("graph_relation_memories", args=[team["zhang_li"].pk])).status_code == 405


# --- /graph/data/ --------------------------------------------------------------------------------------------


def test_data_returns_my_top_entities_and_the_relations_among_them(logged_in, user, other_user, team):
    memory(user, "张三和李四一起工作", team["zhang"], team["li"])
    stranger = entity(other_user, "Mallory", frequency=99)
    relate(other_user, stranger, entity(other_user, "Eve"))
    response = data(logged_in)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["nodes"][0] == {
        "id": str(team["zhang"].pk),
        "label": "张三",
        "type": "PERSON",
        "type_label": "person",
        "frequency": 5,
        "memory_count": 1,
    }
    assert [node["label"] for node in body["nodes"]] == ["张三", "李四", "React", "Acme"]
    assert body["edges"][0] == {
        "id": str(team["zhang_li"].pk),
        "source": str(team["zhang"].pk),
        "target": str(team["li"].pk),
        "type": "WORKS_WITH",
        "strength": 0.9,
        "frequency": 3,
    }
    assert [edge["type"] for edge in body["edges"]] == ["WORKS_WITH", "SKILLED_IN", "USED_BY"]
    assert {key: body[key] for key in ("total", "shown", "max_nodes", "capped", "message")} == {
        "total": 4,
        "shown": 4,
        "max_nodes": MAX_NODES,
        "capped": False,
        "message": "",
    }


def test_data_caps_the_nodes_and_says_how_many_there_are(logged_in, user):
    Entity.objects.bulk_create(
        [
            Entity(user=user, name=f"e{i:03}", key=f"e{i:03}", frequency=1000 - i)
            for i in range(MAX_NODES + 12)
        ]
    )
    first, last_shown, left_out = (Entity.objects.get(user=user, key=key) for key in ("e000", "e299", "e300"))
    relate(user, first, last_shown)
    relate(user, first, left_out)  # its target is not drawn, so neither is the edge
    body = data(logged_in).json()
    assert len(body["nodes"]) == MAX_NODES == 300
    assert body["nodes"][-1]["label"] == "e299"
    assert [edge["target"] for edge in body["edges"]] == [str(last_shown.pk)]
    assert (body["total"], body["shown"], body["capped"]) == (312, 300, True)
    assert body["message"] == "Showing 300 of 312 entities — refine the search"


def test_data_counts_the_matches_with_a_smaller_limit(logged_in, team):
    body = data(logged_in, "?limit=2").json()
    assert [node["label"] for node in body["nodes"]] == ["张三", "李四"]
    assert [edge["type"] for edge in body["edges"]] == ["WORKS_WITH"]
    assert body["message"] == "Showing 2 of 4 entities — refine the search"


def test_data_filters_by_type(logged_in, team):
    body = data(logged_in, "?type=PERSON").json()
    assert [node["label"] for node in body["nodes"]] == ["张三", "李四"]
    assert [edge["type"] for edge in body["edges"]] == ["WORKS_WITH"]
    assert data(logged_in, "?type=ORG").json()["nodes"][0]["label"] == "Acme"
    assert data(logged_in, "?type=EVENT").json()["nodes"] == []


@pytest.mark.parametrize(
    ("query", "labels", "neighbours"),
    [
        ("李", ["李四"], ["张三", "React"]),
        ("react", ["React"], ["李四", "Acme"]),
        ("ac", ["React", "Acme"], ["李四"]),
    ],
)
def test_data_searches_entity_names_and_draws_their_neighbours(logged_in, team, query, labels, neighbours):
    body = data(logged_in, f"?q={query}").json()
    assert [node["label"] for node in body["nodes"] if node["match"]] == labels
    assert [node["label"] for node in body["nodes"] if not node["match"]] == neighbours
    assert (body["total"], body["shown"], body["neighbours"]) == (len(labels), len(labels), len(neighbours))
    drawn = {node["id"] for node in body["nodes"]}
    assert body["edges"] and all({edge["source"], edge["target"]} <= drawn for edge in body["edges"])


def test_data_search_draws_neighbours_to_the_asked_depth(logged_in, team):
    body = data(logged_in, "?q=张三&depth=3").json()
    assert [(node["label"], node.get("hops")) for node in body["nodes"]] == [
        ("张三", None),
        ("李四", 1),
        ("React", 2),
        ("Acme", 3),
    ]
    assert len(body["edges"]) == 3


def test_data_search_without_match_is_empty_not_an_error(logged_in, team):
    body = data(logged_in, "?q=nobody").json()
    assert (body["nodes"], body["edges"], body["total"], body["message"]) == ([], [], 0, "")


@pytest.mark.parametrize("query", ["?type=ALIEN", "?limit=0", "?limit=301", "?limit=many"])
def test_data_rejects_bad_parameters(logged_in, team, query):
    response = data(logged_in, query)
    assert response.status_code == 400
    assert response.json()["detail"].split(" must ")[0] in {"type", "limit"}


def test_data_reads_a_fixed_number_of_queries(logged_in, team, django_assert_num_queries):
    with django_assert_num_queries(4):  # session, user, entities, relations
        data(logged_in)
    with django_assert_num_queries(5):  # ... and the count when the limit is reached
        data(logged_in, "?limit=2")


# --- neighbours ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("depth", "expected", "edges"),
    [
        ("1", [("李四", 1)], ["WORKS_WITH"]),
        ("2", [("李四", 1), ("React", 2)], ["WORKS_WITH", "SKILLED_IN"]),
        ("3", [("李四", 1), ("React", 2), ("Acme", 3)], ["WORKS_WITH", "SKILLED_IN", "USED_BY"]),
    ],
)
def test_neighbors_by_depth(logged_in, team, depth, expected, edges):
    response = neighbors(logged_in, team["zhang"], f"?depth={depth}")
    assert response.status_code == 200
    body = response.json()
    assert body["center"]["id"] == str(team["zhang"].pk)
    assert body["center"]["hops"] == 0
    assert [(node["label"], node["hops"]) for node in body["nodes"]] == expected
    assert [edge["type"] for edge in body["edges"]] == edges
    assert (body["depth"], body["truncated"], body["max_nodes"]) == (int(depth), False, MAX_NODES)


def test_neighbors_walk_both_directions_and_default_to_one_hop(logged_in, team):
    body = neighbors(logged_in, team["li"]).json()
    assert sorted(node["label"] for node in body["nodes"]) == ["React", "张三"]
    assert body["depth"] == 1


def test_neighbors_never_cross_to_another_users_graph(logged_in, user, other_user, team):
    mallory = entity(other_user, "Mallory")
    # A corrupt row linking users must not leak either: the walk stays within the user's relations.
    Relation.objects.create(user=other_user, source=mallory, target=team["acme"])
    body = neighbors(logged_in, team["acme"], "?depth=3").json()
    assert "Mallory" not in {node["label"] for node in body["nodes"]}


def test_neighbors_are_capped(logged_in, user):
    hub = entity(user, "hub")
    leaves = Entity.objects.bulk_create(
        [Entity(user=user, name=f"leaf{i:03}", key=f"leaf{i:03}") for i in range(MAX_NODES + 5)]
    )
    Relation.objects.bulk_create([Relation(user=user, source=hub, target=leaf) for leaf in leaves])
    body = neighbors(logged_in, hub).json()
    assert len(body["nodes"]) == MAX_NODES
    assert body["truncated"] is True
    assert len(body["edges"]) == MAX_NODES


@pytest.mark.parametrize("depth", ["0", "4", "deep"])
def test_neighbors_reject_a_bad_depth(logged_in, team, depth):
    response = neighbors(logged_in, team["zhang"], f"?depth={depth}")
    assert response.status_code == 400
    assert response.json() == {"detail": "depth must be a whole number from 1 to 3"}


# --- the side panel ------------------------------------------------------------------------------------------


def test_entity_memories_partial_lists_the_memories_naming_it(logged_in, user, other_user, team):
    older = memory(user, "张三和李四一起工作", team["zhang"], team["li"])
    newer = memory(user, "李四擅长React", team["li"], team["react"])
    memory(user, "张三 alone", team["zhang"])
    memory(other_user, "李四 in someone else's notes")
    response = logged_in.get(reverse("graph_entity_memories", args=[team["li"].pk]), **HTMX)
    assert response.status_code == 200
    html = response.text
    assert "<html" not in html
    assert '<h2 class="panel-title"><span class="swatch entity-type-PERSON"></span>李四</h2>' in html
    assert "mentioned 4 times · 2 relations" in html
    assert html.index(f'href="/memories/{newer.pk}/"') < html.index(f'href="/memories/{older.pk}/"')
    assert "张三 alone" not in html
    assert "someone else" not in html


def test_entity_memories_partial_says_when_it_shows_only_the_newest(logged_in, user, team):
    for i in range(graph_views.PANEL_MEMORIES + 2):
        memory(user, f"note {i}", team["acme"])
    html = logged_in.get(reverse("graph_entity_memories", args=[team["acme"].pk]), **HTMX).text
    assert html.count('class="graph-memory"') == graph_views.PANEL_MEMORIES
    assert "The newest 20 of 22 memories." in html


def test_entity_memories_partial_escapes_names_and_content(logged_in, user):
    evil = entity(user, XSS)
    memory(user, f"{XSS} said hello", evil)
    html = logged_in.get(reverse("graph_entity_memories", args=[evil.pk]), **HTMX).text
    assert XSS not in html
    assert f"</span>{ESCAPED}</h2>" in html
    assert f"{ESCAPED} said hello" in html


def test_entity_memories_partial_without_memories(logged_in, team):
    html = logged_in.get(reverse("graph_entity_memories", args=[team["acme"].pk]), **HTMX).text
    assert "No memory mentions this entity any more." in html


def test_relation_partial_shows_the_relation_and_its_evidence(logged_in, user, team):
    evidence = memory(user, "张三和李四一起工作", team["zhang"], team["li"])
    also = memory(user, "张三 thanked 李四", team["zhang"], team["li"])
    memory(user, "张三 alone", team["zhang"])
    relation = team["zhang_li"]
    relation.evidence = evidence
    relation.save(update_fields=["evidence"])
    response = logged_in.get(reverse("graph_relation_memories", args=[relation.pk]), **HTMX)
    assert response.status_code == 200
    html = response.text
    assert "<html" not in html
    assert '<h2 class="panel-title">张三 → 李四</h2>' in html
    assert '<span class="tag">WORKS_WITH</span>' in html
    assert "0.90" in html
    assert "seen 3 times" in html
    evidence_part, others = html.split("Other memories naming both")
    assert f'href="/memories/{evidence.pk}/"' in evidence_part
    assert f'href="/memories/{also.pk}/"' in others
    assert f'href="/memories/{evidence.pk}/"' not in others
    assert "张三 alone" not in html


def test_relation_partial_without_evidence(logged_in, team):
    html = logged_in.get(reverse("graph_relation_memories", args=[team["react_acme"].pk]), **HTMX).text
    assert "No evidence memory is recorded for this relation." in html
    assert "Other memories naming both" not in html


def test_relation_partial_escapes_names(logged_in, user):
    relation = relate(user, entity(user, XSS), entity(user, "target"), relation_type="IS_A")
    html = logged_in.get(reverse("graph_relation_memories", args=[relation.pk]), **HTMX).text
    assert XSS not in html
    assert f"{ESCAPED} → target" in html


# --- another user's ids --------------------------------------------------------------------------------------


def test_another_users_entity_or_relation_is_a_404(logged_in, other_user):
    theirs = entity(other_user, "Mallory")
    their_relation = relate(other_user, theirs, entity(other_user, "Eve"))
    for url in (
        reverse("graph_entity_neighbors", args=[theirs.pk]),
        reverse("graph_entity_memories", args=[theirs.pk]),
        reverse("graph_relation_memories", args=[their_relation.pk]),
        reverse("graph_entity_neighbors", args=[uuid.uuid4()]),
        reverse("graph_entity_memories", args=[uuid.uuid4()]),
        reverse("graph_relation_memories", args=[uuid.uuid4()]),
    ):
        response = logged_in.get(url, **HTMX)
        assert response.status_code == 404, url
        assert "Mallory" not in response.text


# --- curation from the page --------------------------------------------------------------------------------------


def post(client: Client, name: str, pk, payload: dict | None = None, htmx: bool = True):
    return client.post(reverse(name, args=[pk]), payload or {}, **(HTMX if htmx else {}))


def test_rename_and_retype_an_entity_records_both_and_tells_the_canvas(logged_in, user, team):
    li = team["li"]
    response = post(logged_in, "graph_entity_edit", li.pk, {"name": "李四 (Li Si)", "entity_type": "ORG"})
    assert response.status_code == 200
    assert "<html" not in response.text
    assert "Saved." in response.text
    li.refresh_from_db()
    assert (li.name, li.key, li.entity_type) == (
        "李四 (Li Si)",
        "李四 (li si",
        "ORG",
    )  # entity_key strips outer brackets
    trigger = json.loads(response["HX-Trigger"])["graph-changed"]
    assert trigger["action"] == "update"
    assert (trigger["node"]["id"], trigger["node"]["label"], trigger["node"]["type"]) == (
        str(li.pk),
        "李四 (Li Si)",
        "ORG",
    )
    edits = list(GraphEdit.objects.filter(entity_id=li.pk).order_by("id"))
    assert [(e.action, e.changes, e.editor, e.via) for e in edits] == [
        ("rename", {"name": ["李四", "李四 (Li Si)"]}, user, "page"),
        ("retype", {"entity_type": ["PERSON", "ORG"]}, user, "page"),
    ]
    # The panel shows the history, and a reload of the graph shows the new name.
    assert "renamed 李四" in post_panel(logged_in, li)
    assert "李四 (Li Si)" in [node["label"] for node in data(logged_in).json()["nodes"]]


def post_panel(client: Client, entity: Entity) -> str:
    return client.get(reverse("graph_entity_memories", args=[entity.pk]), **HTMX).text


def test_a_rename_onto_another_entitys_name_is_refused_with_a_hint_to_merge(logged_in, team):
    response = post(
        logged_in, "graph_entity_edit", team["li"].pk, {"name": "ZHANG三", "entity_type": "PERSON"}
    )
    assert response.status_code == 200  # not refused: 张三's key is "张三", not "zhang三"
    response = post(logged_in, "graph_entity_edit", team["li"].pk, {"name": "react", "entity_type": "PERSON"})
    assert response.status_code == 422
    assert "“React” already exists: merge into it instead" in response.text
    assert "HX-Trigger" not in response
    assert Entity.objects.get(pk=team["li"].pk).name == "ZHANG三"


def test_merge_from_the_page_moves_relations_and_records_it(logged_in, user, team):
    zhang, li, react = team["zhang"], team["li"], team["react"]
    response = post(logged_in, "graph_entity_merge", li.pk, {"into": "张三"})
    assert response.status_code == 200
    assert not Entity.objects.filter(pk=li.pk).exists()
    assert Relation.objects.filter(source=zhang, target=react, relation_type="SKILLED_IN").exists()
    change = json.loads(response["HX-Trigger"])["graph-changed"]
    assert (change["action"], change["removed"], change["node"]["id"]) == ("merge", str(li.pk), str(zhang.pk))
    assert [node["label"] for node in change["nodes"]] == ["React"]
    assert "Merged “李四” into 张三." in response.text
    [edit] = GraphEdit.objects.filter(action="merge")
    assert (edit.entity_id, edit.label, edit.changes["into"], edit.editor) == (
        li.pk,
        "李四",
        str(zhang.pk),
        user,
    )
    assert "merged 李四" in post_panel(logged_in, zhang)  # the target's history shows what was folded in


def test_merge_into_an_unknown_name_or_itself_is_refused(logged_in, team):
    response = post(logged_in, "graph_entity_merge", team["li"].pk, {"into": "nobody"})
    assert response.status_code == 422
    assert "No entity of yours has that name" in response.text
    response = post(logged_in, "graph_entity_merge", team["li"].pk, {"into": "李四"})
    assert response.status_code == 422
    assert "cannot be merged into itself" in response.text
    assert Entity.objects.filter(pk=team["li"].pk).exists()
    assert not GraphEdit.objects.exists()


def test_delete_an_entity_from_the_page(logged_in, user, team):
    li = team["li"]
    response = post(logged_in, "graph_entity_delete", li.pk)
    assert response.status_code == 200
    assert "Deleted the entity “李四”" in response.text
    assert json.loads(response["HX-Trigger"])["graph-changed"] == {"action": "delete", "removed": str(li.pk)}
    assert not Entity.objects.filter(pk=li.pk).exists()
    assert Relation.objects.filter(user=user).count() == 1  # only React -USED_BY-> Acme is left
    [edit] = GraphEdit.objects.all()
    assert (edit.action, edit.entity_id, edit.label, edit.via) == ("delete", li.pk, "李四", "page")


def test_edit_and_delete_a_relation_from_the_page(logged_in, user, team):
    relation = team["li_react"]
    response = post(
        logged_in, "graph_relation_edit", relation.pk, {"relation_type": "uses daily", "strength": "0.25"}
    )
    assert response.status_code == 200
    relation.refresh_from_db()
    assert (relation.relation_type, relation.strength) == ("USES_DAILY", 0.25)
    change = json.loads(response["HX-Trigger"])["graph-changed"]
    assert (change["action"], change["edge"]["type"], change["edge"]["strength"]) == (
        "update-edge",
        "USES_DAILY",
        0.25,
    )
    response = post(logged_in, "graph_relation_edit", relation.pk, {"relation_type": "x", "strength": "2"})
    assert response.status_code == 422
    assert "strength must be between 0 and 1" in response.text

    response = post(logged_in, "graph_relation_delete", relation.pk)
    assert response.status_code == 200
    assert not Relation.objects.filter(pk=relation.pk).exists()
    assert [(e.action, e.relation_id) for e in GraphEdit.objects.order_by("id")] == [
        ("edit_rel", relation.pk),
        ("del_rel", relation.pk),
    ]
    assert GraphEdit.objects.order_by("id")[0].changes == {
        "relation_type": ["SKILLED_IN", "USES_DAILY"],
        "strength": [0.7, 0.25],
    }


def test_curation_without_htmx_redirects_to_the_graph(logged_in, team):
    response = post(
        logged_in, "graph_entity_edit", team["li"].pk, {"name": "Li", "entity_type": "PERSON"}, htmx=False
    )
    assert (response.status_code, response["Location"]) == (302, reverse("graph"))
    assert Entity.objects.get(pk=team["li"].pk).name == "Li"


@pytest.mark.parametrize("name", ["graph_entity_edit", "graph_entity_merge", "graph_entity_delete"])
def test_curating_another_users_entity_is_a_404(logged_in, other_user, name):
    theirs = entity(other_user, "Eve")
    response = post(logged_in, name, theirs.pk, {"name": "Mine", "into": "Eve", "entity_type": "ORG"})
    assert response.status_code == 404
    assert Entity.objects.get(pk=theirs.pk).name == "Eve"
    assert not GraphEdit.objects.exists()


@pytest.mark.parametrize("name", ["graph_relation_edit", "graph_relation_delete"])
def test_curating_another_users_relation_is_a_404(logged_in, other_user, name):
    theirs = relate(other_user, entity(other_user, "Eve"), entity(other_user, "Mallory"))
    response = post(logged_in, name, theirs.pk, {"relation_type": "MINE", "strength": "1"})
    assert response.status_code == 404
    assert Relation.objects.get(pk=theirs.pk).relation_type == "RELATED_TO"


def test_merge_cannot_reach_another_users_entity_by_name(logged_in, other_user, team):
    entity(other_user, "Eve")
    response = post(logged_in, "graph_entity_merge", team["li"].pk, {"into": "Eve"})
    assert response.status_code == 422
    assert Entity.objects.filter(pk=team["li"].pk).exists()


@pytest.mark.parametrize(
    "name", ["graph_entity_edit", "graph_entity_merge", "graph_entity_delete", "graph_relation_delete"]
)
def test_curation_only_answers_post_and_needs_a_login(client, logged_in, team, name):
    pk = team["zhang_li"].pk if "relation" in name else team["li"].pk
    assert logged_in.get(reverse(name, args=[pk])).status_code == 405
    logged_in.logout()
    assert logged_in.post(reverse(name, args=[pk])).status_code == 302
    assert Entity.objects.filter(pk=team["li"].pk).exists()


def test_the_api_merge_and_delete_are_recorded_with_the_key(api, user, write_key):
    from core.models import ApiKey

    source, target = entity(user, "Bob"), entity(user, "Robert")
    response = api("post", f"/entities/{source.pk}/merge", {"into": str(target.pk)})
    assert response.status_code == 200
    response = api("delete", f"/entities/{target.pk}")
    assert response.status_code == 204
    key = ApiKey.objects.get(user=user)
    assert [(e.action, e.via, e.api_key) for e in GraphEdit.objects.order_by("id")] == [
        ("merge", "api", key),
        ("delete", "api", key),
    ]
