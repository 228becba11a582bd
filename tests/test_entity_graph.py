import io
import json
import math

import pytest

from memories.actions.forgetting import memories_delete
from memories.actions.write import memory_create
from memories.entities import entity_key, extract
from memories.entity_links import _written_as_name, link_entities
from memories.graph import entity_merge
from memories.models import Entity, Memory, MemoryEntity, Relation
from memories.retrieval import search_memories
from memories.tools import MemoryTool

pytestmark = pytest.mark.django_db(transaction=True)


def names(memory: Memory) -> set[str]:
    return set(memory.entities.values_list("name", flat=True))


def test_the_tutorials_sentence_yields_li_si_react_and_vue(user):
    memory = memory_create(
        user=user, content="李四是前端工程师，擅长React和Vue.js开发", memory_type="semantic"
    )
    assert {"李四", "React", "Vue.js"} <= names(memory)
    typed = set(
        Relation.objects.exclude(relation_type="CO_OCCURS").values_list(
            "source__name", "relation_type", "target__name"
        )
    )
    assert ("李四", "SKILLED_IN", "React") in typed
    assert ("李四", "SKILLED_IN", "Vue.js") in typed


def test_entities_the_user_already_has_are_found_again_as_whole_words(user):
    memory_create(user=user, content="李四是前端工程师，擅长React和Vue.js开发", memory_type="semantic")
    memory_create(user=user, content="王五懂Java", memory_type="semantic")
    later = memory_create(
        user=user,
        content="the dashboard moved to react and typescript, not javascript",
        memory_type="semantic",
    )
    # "react" is no name to the English extractor, but this user's graph knows it; "java" is only part of a word.
    assert "React" in names(later)
    assert "Java" not in names(later)


def test_a_known_name_is_found_again_only_where_the_text_writes_it_as_one(user):
    first = memory_create(
        user=user, content="We binge-watched GoT with Priya all weekend.", memory_type="episodic"
    )
    memory_create(user=user, content="Mara bought an iPhone in Oslo.", memory_type="episodic")
    assert {"GoT", "Priya"} <= names(first)

    def linked(content: str) -> set[str]:
        return names(memory_create(user=user, content=content, memory_type="episodic"))

    # A text with capitals writes a name with one: "got" there is another word.
    assert "GoT" not in linked("Tomas got a new bike for the commute.")
    assert "GoT" in linked("Rewatching GoT tonight.")
    assert "iPhone" in linked("The iPhone screen cracked on Monday.")  # a name spelt as the graph spells it
    # Read as merge keys are: a full-width spelling, or more spaces, write the same name.
    assert _written_as_name("GoT", "Rewatching ＧｏＴ tonight.")
    assert _written_as_name("Kofi Mensah", "Call Kofi  Mensah today.")
    assert not _written_as_name("GoT", "Ｉ ｇｏｔ ｉｔ.")
    # A writer who never uses capitals is read regardless of case.
    assert "Priya" in linked("priya says hi")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Alice Johnson works at Google in London.", {"Alice Johnson", "Google", "London"}),
        ("张三在上海的腾讯工作", {"张三", "上海", "腾讯"}),
        ("王小明下周去杭州出差，顺便学习Node.js", {"杭州", "Node.js"}),
        ("Caroline met Melanie at the LGBTQ support group.", {"Caroline", "Melanie"}),
    ],
)
def test_offline_extraction_in_chinese_english_and_mixed_text(text, expected):
    found = {mention.name for mention in extract(text).mentions}
    assert expected <= found


def test_extraction_does_not_make_a_node_per_token():
    mentions = extract("The user prefers short answers with code examples.").mentions
    assert mentions == []


@pytest.mark.parametrize(
    ("a", "b"), [("Vue.js", "vue.js"), ("Ｖｕｅ．ｊｓ", "vue.js"), ("  React ", "react"), ("“李四”", "李四")]
)
def test_entities_are_normalised(a, b):
    assert entity_key(a) == entity_key(b)


def test_entities_merge_per_user_by_key_and_count_frequency(user, other_user):
    memory_create(user=user, content="李四擅长Vue.js", memory_type="semantic")
    memory_create(user=user, content="王五也在学vue.js", memory_type="semantic")
    memory_create(user=other_user, content="Vue.js is great", memory_type="semantic")
    vue = Entity.objects.get(user=user, key="vue.js")
    assert vue.frequency == 2
    assert Entity.objects.filter(key="vue.js").count() == 2  # one per user


def test_relations_carry_type_strength_frequency_and_evidence(user):
    first = memory_create(user=user, content="李四擅长React", memory_type="semantic")
    second = memory_create(user=user, content="李四擅长React和Vue.js", memory_type="semantic")
    relation = Relation.objects.get(source__key="李四", target__key="react", relation_type="SKILLED_IN")
    assert relation.frequency == 2
    assert relation.strength == pytest.approx(0.8)
    assert relation.evidence_id == second.pk
    assert first.pk != second.pk


def test_deleting_the_last_memory_removes_orphan_entities(user):
    memory = memory_create(user=user, content="孙七擅长Rust", memory_type="semantic")
    memories_delete(user=user, memory_ids=[memory.pk])
    assert not Entity.objects.filter(user=user).exists()


def test_a_memory_deleted_before_a_late_extraction_gets_no_links(user):
    # The worker's LLM extraction can reach a memory the user has just deleted.
    memory = memory_create(user=user, content="李四在阿里巴巴工作，擅长React", memory_type="semantic")
    assert MemoryEntity.objects.filter(memory=memory).exists()
    Memory.objects.filter(pk=memory.pk).delete()
    assert link_entities(memory) == []
    assert not MemoryEntity.objects.filter(memory_id=memory.pk).exists()


def test_merge_moves_links_and_relations_and_adds_duplicates(user):
    a = memory_create(user=user, content="李四擅长React", memory_type="semantic")
    memory_create(user=user, content="Li Si uses React every day.", memory_type="semantic")
    li_si_en = Entity.objects.get(user=user, key="li si")
    li_si = Entity.objects.get(user=user, key="李四")
    merged = entity_merge(user=user, source=li_si_en, target=li_si)
    assert not Entity.objects.filter(pk=li_si_en.pk).exists()
    assert merged.frequency == 2
    assert MemoryEntity.objects.filter(entity=li_si).count() == 2
    react_links = Relation.objects.filter(source=li_si, target__key="react")
    assert {r.relation_type for r in react_links} >= {"SKILLED_IN", "USES"}
    assert a.pk in set(li_si.memories.values_list("pk", flat=True))


def test_mentions_read_ahead_give_the_same_extraction_and_are_ignored_for_another_text():
    # memory_write reads a text's mentions before its transaction and hands them to link_entities.
    from memories.entities import model_mentions

    text = "Kofi Mensah manages the Lisbon office and uses React."
    known = {"react": "SKILL"}
    assert extract(text, known, mentions=model_mentions(text)) == extract(text, known)
    other = model_mentions("Ana Silva plays the cello.")
    assert extract(text, known, mentions=other) == extract(text, known)


def test_graph_aware_retrieval_finds_memories_through_neighbours(user):
    tool = MemoryTool(user_id=user.username)
    tool.run({"action": "add", "content": "李四擅长React", "memory_type": "semantic", "importance": 0.5})
    tool.run(
        {
            "action": "add",
            "content": "React 19 adds server actions",
            "memory_type": "semantic",
            "importance": 0.5,
        }
    )
    hits = search_memories(user=user, query="李四", min_importance=0).hits
    by_content = {hit.memory.content: hit.scores for hit in hits}
    assert by_content["李四擅长React"]["graph"] == 1.0
    # No word of the query in it: found through 李四 → React, one hop away (0.6), and React is on both memories,
    # so it counts at its specificity log(1 + 2/2) / log(1 + 2).
    assert by_content["React 19 adds server actions"]["graph"] == pytest.approx(
        0.6 * math.log(2) / math.log(3), abs=1e-4
    )
    # A tool's results go into a model's context: only the memories that match the query themselves.
    reply = tool.execute({"action": "search", "query": "李四", "min_importance": 0})
    assert [result["content"] for result in reply.data["results"]] == ["李四擅长React"]


@pytest.mark.parametrize("facts_read_whole", [500, 0], ids=["read-from-the-facts", "read-from-the-entities"])
def test_graph_scores_are_the_same_whichever_side_the_fact_links_are_read_from(
    user, monkeypatch, facts_read_whole
):
    # retrieval._fact_links reads a user's fact links from the facts while they are few, else from the
    # entities in reach; both must find the same links. An event (not a fact) counts only when the signals
    # found it.
    from memories import retrieval

    monkeypatch.setattr(retrieval, "FACTS_READ_WHOLE", facts_read_whole)
    tool = MemoryTool(user_id=user.username)
    tool.run({"action": "add", "content": "李四擅长React", "memory_type": "semantic", "importance": 0.5})
    tool.run({"action": "add", "content": "React 19 adds server actions", "memory_type": "semantic"})
    tool.run({"action": "add", "content": "李四 went hiking on Sunday", "memory_type": "episodic"})
    event = Memory.objects.get(content="李四 went hiking on Sunday")
    reach = retrieval._graph_reach(user, "李四")
    scores = retrieval._graph_scores(reach, found=set())
    by_content = {Memory.objects.get(pk=pk).content: score for pk, score in scores.items()}
    assert by_content == {
        "李四擅长React": pytest.approx(math.log(1 + 3 / 2) / math.log(4), abs=1e-6),
        "React 19 adds server actions": pytest.approx(0.6 * math.log(1 + 3 / 2) / math.log(4), abs=1e-6),
    }
    scores = retrieval._graph_scores(reach, found={str(event.pk)})
    assert str(event.pk) in scores


def test_entity_api_lists_searches_neighbours_merges_and_deletes(client, user, write_key, other_user):
    memory_create(user=user, content="李四擅长React和Vue.js", memory_type="semantic")
    memory_create(user=other_user, content="李四在北京", memory_type="semantic")
    headers = {"HTTP_X_API_KEY": write_key}
    listed = client.get("/api/v1/entities?q=李", **headers).json()
    assert [item["name"] for item in listed["items"]] == ["李四"]
    li_si = listed["items"][0]["id"]
    neighbors = client.get(f"/api/v1/entities/{li_si}/neighbors?depth=1", **headers).json()
    assert {n["entity"]["name"] for n in neighbors["neighbors"]} == {"React", "Vue.js"}
    assert client.get(f"/api/v1/entities/{li_si}/neighbors?depth=4", **headers).status_code == 422
    detail = client.get(f"/api/v1/entities/{li_si}", **headers).json()
    assert detail["memories"][0]["content"] == "李四擅长React和Vue.js"
    react = Entity.objects.get(user=user, key="react").pk
    vue = Entity.objects.get(user=user, key="vue.js").pk
    merged = client.post(
        f"/api/v1/entities/{vue}/merge",
        data=json.dumps({"into": str(react)}),
        content_type="application/json",
        **headers,
    )
    assert merged.status_code == 200
    assert not Entity.objects.filter(pk=vue).exists()
    assert client.delete(f"/api/v1/entities/{react}", **headers).status_code == 204
    theirs = Entity.objects.get(user=other_user, key="李四").pk
    for method, path in [
        ("get", f"/api/v1/entities/{theirs}"),
        ("get", f"/api/v1/entities/{theirs}/neighbors"),
        ("delete", f"/api/v1/entities/{theirs}"),
    ]:
        assert getattr(client, method)(path, **headers).status_code == 404
    assert Entity.objects.filter(pk=theirs).exists()
    relations = client.get("/api/v1/relations", **headers).json()
    assert all(item["source_name"] != "北京" and item["target_name"] != "北京" for item in relations["items"])


@pytest.mark.neo4j
def test_the_neo4j_mirror_follows_creates_merges_and_deletes(settings, user, neo4j_uri):
    import os

    from core import stores
    from core.graphstore.neo4j import Neo4jGraphStore

    settings.NEO4J_URI = neo4j_uri
    settings.NEO4J_PASSWORD = os.environ.get("NEO4J_PASSWORD", "")
    stores.reset(embeddings=False)
    neo4j = stores.graph_store()
    assert isinstance(neo4j, Neo4jGraphStore)
    try:
        memory = memory_create(user=user, content="李四擅长React和Vue.js", memory_type="semantic")
        nodes = neo4j._run("MATCH (e:Entity {user_id: $u}) RETURN e.name AS name", u=str(user.pk))
        assert {record["name"] for record in nodes} == {"李四", "React", "Vue.js"}
        assert set(Entity.objects.filter(user=user).values_list("mirror_state", flat=True)) == {"synced"}
        assert set(Relation.objects.filter(user=user).values_list("mirror_state", flat=True)) == {"synced"}
        li_si = Entity.objects.get(user=user, key="李四")
        assert {n.distance for n in neo4j.neighbors(str(user.pk), [str(li_si.pk)], depth=1)} == {1}
        # Mirroring twice leaves one node.
        from memories.graph import mirror_entity

        mirror_entity(str(li_si.pk))
        assert neo4j._run("MATCH (e:Entity {id: $id}) RETURN count(e) AS n", id=str(li_si.pk))[0]["n"] == 1
        vue = Entity.objects.get(user=user, key="vue.js")
        react = Entity.objects.get(user=user, key="react")
        entity_merge(user=user, source=vue, target=react)
        assert neo4j._run("MATCH (e:Entity {id: $id}) RETURN count(e) AS n", id=str(vue.pk))[0]["n"] == 0
        memories_delete(user=user, memory_ids=[memory.pk])
        assert neo4j._run("MATCH (e:Entity {user_id: $u}) RETURN count(e) AS n", u=str(user.pk))[0]["n"] == 0
    finally:
        neo4j.delete_user(str(user.pk))
        stores.reset(embeddings=False)


def test_entities_and_relations_show_their_graph_mirror_state(settings, user, short_graph_waits):
    from core import stores

    memory_create(user=user, content="李四擅长React", memory_type="semantic")
    # The SQL graph store is the tables themselves: nothing to wait for.
    assert set(Entity.objects.values_list("mirror_state", flat=True)) == {"synced"}
    assert set(Relation.objects.values_list("mirror_state", flat=True)) == {"synced"}

    settings.NEO4J_URI = "bolt://127.0.0.1:9"  # nothing listens there
    stores.reset(embeddings=False)
    try:
        memory_create(user=user, content="王五在腾讯工作", memory_type="semantic")
        wang = Entity.objects.get(user=user, key="王五")
        assert wang.mirror_state == "failed"
        assert "NEO4J_URI" in wang.mirror_error
        assert Relation.objects.filter(source=wang).values_list("mirror_state", flat=True).first() == "failed"
        # What was mirrored before the outage keeps its state.
        assert Entity.objects.get(user=user, key="李四").mirror_state == "synced"
    finally:
        stores.reset(embeddings=False)


def test_resync_mirrors_marks_rows_saved_before_the_state_was_recorded(user):
    from django.core.management import call_command

    (entity,) = Entity.objects.bulk_create([Entity(user=user, name="旧实体", key="旧实体")])  # no signals
    assert entity.mirror_state == "pending"
    out = io.StringIO()
    call_command("resync_mirrors", stdout=out)
    entity.refresh_from_db()
    assert entity.mirror_state == "synced"
    assert "Mirrored 1 entities and 0 relations to the graph store." in out.getvalue()


@pytest.mark.neo4j
def test_resync_mirrors_all_fills_a_new_neo4j_with_the_existing_graph(settings, user, neo4j_uri):
    import os

    from django.core.management import call_command

    from core import stores

    memory_create(user=user, content="李四擅长React和Vue.js", memory_type="semantic")  # on the SQL graph
    settings.NEO4J_URI = neo4j_uri
    settings.NEO4J_PASSWORD = os.environ.get("NEO4J_PASSWORD", "")
    stores.reset(embeddings=False)
    neo4j = stores.graph_store()
    try:
        assert neo4j._run("MATCH (e:Entity {user_id: $u}) RETURN count(e) AS n", u=str(user.pk))[0]["n"] == 0
        call_command("resync_mirrors", "--all", stdout=io.StringIO())
        nodes = neo4j._run("MATCH (e:Entity {user_id: $u}) RETURN e.name AS name", u=str(user.pk))
        assert {record["name"] for record in nodes} == {"李四", "React", "Vue.js"}
        edges = neo4j._run(
            "MATCH (:Entity)-[r:REL {user_id: $u}]->(:Entity) RETURN count(r) AS n", u=str(user.pk)
        )
        assert edges[0]["n"] == Relation.objects.filter(user=user).count()
    finally:
        neo4j.delete_user(str(user.pk))
        stores.reset(embeddings=False)


def test_a_role_is_no_entity_and_each_related_pair_has_one_edge(user):
    memory_create(user=user, content="用户张三是一名Python开发者", memory_type="semantic")
    edges = set(Relation.objects.values_list("source__name", "relation_type", "target__name"))
    assert edges == {("张三", "SKILLED_IN", "Python")}  # no IS_A, and no CO_OCCURS beside the typed edge
    memory_create(
        user=user, content="Alice Johnson and Bob Lee met at the Lisbon office", memory_type="semantic"
    )
    memory_create(user=user, content="Alice Johnson works at Google", memory_type="semantic")
    memory_create(user=user, content="Alice Johnson visited Google", memory_type="semantic")
    pair = Relation.objects.filter(source__name="Alice Johnson", target__name="Google")
    assert list(pair.values_list("relation_type", flat=True)) == ["WORKS_AT"]
    assert not Relation.objects.filter(source__name="Google", target__name="Alice Johnson").exists()


def test_events_feed_the_graph_too(user):
    event = memory_create(
        user=user, content="Met Kofi Mensah at the Accra office of Globex", memory_type="episodic"
    )
    assert {"Kofi Mensah", "Globex"} <= names(event)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # spaCy's small model calls these cities people or organisations; the gazetteer knows them.
        ("Our Graz branch office ordered new chairs.", {("Graz", "PLACE")}),
        ("The Turin branch office is closing in March.", {("Turin", "PLACE")}),
        ("Called Yusuf about the Malmo branch.", {("Yusuf", "PERSON"), ("Malmo", "PLACE")}),
        # A capitalised verb opening the sentence and a courtesy title are no part of the name.
        ("Phoned Dr Okonkwo after lunch.", {("Okonkwo", "PERSON")}),
        # "St" (Saint, Street) is part of the name it opens, no courtesy title.
        ("Our cousin moved to St Albans last spring.", {("St Albans", "PLACE")}),
        ("Bumped into Ingeborg at the Utrecht conference.", {("Ingeborg", "PERSON"), ("Utrecht", "PLACE")}),
        # ... also where spaCy reads the verb and the name as one person; a given name opening it stays whole.
        ("Email Rosalind about the slides.", {("Rosalind", "PERSON")}),
        ("Rosalind Achebe emailed the slides.", {("Rosalind Achebe", "PERSON")}),
        # An account handle is a name of its own, a person's, whatever its capitals or the word before it; an
        # e-mail address's user is no name.
        ("Ping @jvargas about the budget.", {("@jvargas", "PERSON")}),
        ("Thanks @KateM for the review.", {("@KateM", "PERSON")}),
        ("Forward it to ana.silva@example.org today.", set()),
        # Chinese: a transliterated country jieba takes for a person; a Latin given name; a Chinese city GeoNames
        # spells only in traditional characters.
        ("他在立陶宛读书。", {("立陶宛", "PLACE")}),
        ("昨天和Oliver一起吃饭。", {("Oliver", "PERSON")}),
        ("她下个月搬去维也纳。", {("维也纳", "PLACE")}),
        # After a verb that takes a place, a name is one: spaCy calls Valencia a person here, jieba 乔丹 one.
        ("The user now lives in Valencia.", {("Valencia", "PLACE")}),
        ("他生活在乔丹。", {("乔丹", "PLACE")}),
        # Before a verb only a person is the subject of, a name is a person: spaCy calls Kenji a place.
        ("Kenji studied at Osaka University.", {("Kenji", "PERSON"), ("Osaka University", "ORG")}),
        # Where one holds a role is an organisation, whatever the role: the model learned from web text, where
        # shops after "at" are places, calls it a place or nothing.
        (
            "Marisol Vega is a backend developer at Quillfeather.",
            {("Marisol Vega", "PERSON"), ("Quillfeather", "ORG")},
        ),
        ("Odile Brun joined as a sales lead at Veridian.", {("Odile Brun", "PERSON"), ("Veridian", "ORG")}),
        # Where one works in Chinese is no person (a brand named after one) and nothing untyped; a city stays one.
        ("他在李宁上班。", {("李宁", "ORG")}),
        ("我在娃哈哈工作。", {("娃哈哈", "ORG")}),
        ("她在杭州工作。", {("杭州", "PLACE")}),
    ],
)
def test_names_are_typed_by_the_packages_gazetteers_and_trimmed(text, expected):
    assert {(m.name, m.entity_type) for m in extract(text).mentions} == expected


def test_a_handle_and_its_name_without_the_at_sign_are_one_entity():
    assert entity_key("@jvargas") == entity_key("jvargas") == "jvargas"


@pytest.mark.parametrize(
    "text",
    [
        "我们在第三季度发布了第二版，三楼的会议室订好了。",
        "We shipped the 3rd release in 2021 and the 10th patch after it.",
        "My token [api_key masked] expired and my password is [password masked].",
    ],
)
def test_numbers_ordinals_and_masked_secrets_are_never_entities(text):
    assert extract(text).mentions == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A chat turn after its speaker's name: the greeting that opens it is no part of the name it addresses.
        ("Priya: Yep Tomas, the new studio looks great!", {"priya", "tomas"}),
        ("Tomas: Congrats Priya! That is huge news.", {"tomas", "priya"}),
        # A name never runs over the colon after the speaker's.
        ("Lucia: Marco is so good at climbing.", {"lucia", "marco"}),
    ],
)
def test_a_chat_turns_speaker_and_the_name_its_greeting_addresses_are_names_of_their_own(text, expected):
    assert {mention.key for mention in extract(text).mentions} == expected


def test_blank_lines_spacy_labels_as_an_entity_name_nothing():
    # spaCy labels the blank lines before a bracketed note ORG; the re-typer's features crashed on the empty name
    # and took the whole bulk add down with a 500.
    text = (
        "Good luck with work, see ya!\n\n [shares a photo: a photo of a record player sitting on the floor]"
    )
    assert extract(text).mentions == []


def test_the_users_own_types_outrank_the_gazetteer_and_the_models(user):
    from memories.graph import entity_update

    first = memory_create(user=user, content="Met Dakar at the harbour.", memory_type="semantic")
    dakar = first.entities.get()
    assert (dakar.name, dakar.entity_type) == ("Dakar", "PLACE")
    entity_update(entity=dakar, entity_type="PERSON")  # Dakar is a colleague's nickname, the user says
    later = memory_create(user=user, content="Dakar reports to Ilse now.", memory_type="semantic")
    assert {(e.name, e.entity_type) for e in later.entities.all()} == {
        ("Dakar", "PERSON"),
        ("Ilse", "PERSON"),
    }
    assert Relation.objects.filter(
        source__name="Dakar", target__name="Ilse", relation_type="REPORTS_TO"
    ).exists()


def test_past_its_budget_the_graph_step_reads_fact_links_from_the_most_specific_entities_only(
    user, monkeypatch
):
    # A name on more facts than the budget leaves (a speaker's, the user's own) says little about any one of
    # them: its links are not read, so the graph step's cost stays bounded however large the store grows. The
    # facts reached through more specific names are still scored; what the signals find keeps its links.
    from memories import retrieval

    tool = MemoryTool(user_id=user.username)
    for content in [
        "Ana Lima lives in Porto.",
        "Ana Lima works at Acme Corp.",
        "Ana Lima likes green tea.",
        "Ana Lima plays chess on Sundays.",
        "Ana Lima owns a red bicycle.",
    ]:
        tool.run({"action": "add", "content": content, "memory_type": "semantic"})
    monkeypatch.setattr(retrieval, "FACTS_READ_WHOLE", 0)

    def scored(budget: int, found: set[str] = frozenset()) -> set[str]:
        monkeypatch.setattr(retrieval, "FACT_LINKS_BUDGET", budget)
        reach = retrieval._graph_reach(user, "Where does Ana Lima live?")
        return {Memory.objects.get(pk=pk).content for pk in retrieval._graph_scores(reach, found)}

    everything = scored(budget=2_000)
    assert len(everything) == 5
    bounded = scored(budget=3)
    assert bounded == {"Ana Lima lives in Porto.", "Ana Lima works at Acme Corp."}
    tea = str(Memory.objects.get(content="Ana Lima likes green tea.").pk)
    assert "Ana Lima likes green tea." in scored(budget=3, found={tea})
