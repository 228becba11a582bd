"""Clean memory in (issue 14): duplicates are counted, not stored; newer facts supersede older ones."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memories import curation
from memories.actions.forgetting import memories_consolidate
from memories.actions.rules import session_for_key
from memories.actions.write import NewMemory, memory_bulk_create, memory_write
from memories.facts import slots
from memories.models import Fact, Memory, MemoryEdit
from memories.tools import MemoryTool

pytestmark = pytest.mark.django_db(transaction=True)


def add(api, content, memory_type="semantic", **fields):
    return api("post", "/memories/", {"content": content, "memory_type": memory_type, **fields})


def test_a_second_identical_post_answers_with_the_first_memory(api, user):
    first = add(api, "The user is allergic to peanuts.")
    assert first.status_code == 201 and first.json()["write"]["action"] == "add"
    again = add(api, "the user is allergic to peanuts", importance=0.9)
    assert again.status_code == 200
    body = again.json()
    assert body["id"] == first.json()["id"]
    assert body["write"]["action"] == "duplicate"
    assert body["seen_count"] == 2 and body["importance"] == 0.9
    assert [source["via"] for source in body["sources"]] == ["api", "api"]
    assert all("api_key" in source for source in body["sources"])
    assert Memory.objects.filter(user=user).count() == 1
    recorded = MemoryEdit.objects.get(memory_id=body["id"])
    assert recorded.reason == "the same text is already stored" and recorded.changes["seen_count"] == [1, 2]


def test_another_users_identical_memory_is_not_a_duplicate(api, user, other_user):
    mine = memory_write(user=other_user, content="I live in Porto", memory_type="semantic")
    response = add(api, "I live in Porto")
    assert response.status_code == 201 and response.json()["id"] != str(mine.memory.pk)
    assert Memory.objects.get(pk=mine.memory.pk).superseded_by is None  # nor superseded by another user


def test_a_fact_that_says_no_more_merges_and_keeps_its_provenance(user):
    first = memory_write(user=user, content="I am vegetarian", memory_type="semantic")
    again = memory_write(user=user, content="I'm vegetarian.", memory_type="semantic", via="tool")
    assert again.action == curation.MERGE and again.memory.pk == first.memory.pk
    assert again.memory.seen_count == 2 and [s["via"] for s in again.memory.sources] == ["system", "tool"]
    edit = MemoryEdit.objects.get(memory=first.memory)
    assert edit.changes["merged"] == [None, "I'm vegetarian."]
    assert "similarity" in edit.reason


def test_similar_sentences_about_different_things_are_both_kept(user):
    memory_write(user=user, content="I have a cat named Mochi", memory_type="semantic")
    for content in ("I have a dog named Bao", "I don't have a cat named Mochi", "我有一只猫", "我有两只猫"):
        assert memory_write(user=user, content=content, memory_type="semantic").action == "add"


def test_a_newer_employer_supersedes_the_older_and_search_follows(api, user):
    acme = add(api, "I work at Acme Corp").json()
    globex = add(api, "I now work at Globex").json()
    assert globex["write"]["action"] == "supersede"
    assert globex["write"]["superseded"] == [acme["id"]]
    old = Memory.objects.get(pk=acme["id"])
    assert str(old.superseded_by_id) == globex["id"] and old.valid_to is not None
    assert "employer is globex" in old.edits.get().reason

    current = api("post", "/memories/search", {"query": "Where do I work?"}).json()["results"]
    assert [r["id"] for r in current] == [globex["id"]]
    history = api("post", "/memories/search", {"query": "Where do I work?", "include_superseded": True})
    results = history.json()["results"]
    assert results[0]["id"] == globex["id"]
    assert {r["id"]: r["superseded_by"] for r in results}[acme["id"]] == globex["id"]

    listed = api("get", "/memories/?superseded=true").json()["items"]
    assert [m["id"] for m in listed] == [acme["id"]]
    assert api("post", f"/memories/{globex['id']}/reinstate").status_code == 409
    reinstated = api("post", f"/memories/{acme['id']}/reinstate").json()
    assert reinstated["superseded_by"] is None and reinstated["valid_to"] is None
    assert "restored" in Memory.objects.get(pk=acme["id"]).edits.first().reason


def test_chinese_facts_supersede_too(user):
    shanghai = memory_write(user=user, content="我住在上海", memory_type="semantic").memory
    moved = memory_write(user=user, content="我搬到杭州了", memory_type="semantic")
    assert moved.action == "supersede" and moved.superseded == (shanghai,)
    name = memory_write(user=user, content="我叫小明", memory_type="semantic").memory
    assert memory_write(user=user, content="用户名叫小明", memory_type="semantic").memory == name


def test_an_imported_older_fact_goes_in_already_superseded(user):
    now = timezone.now()
    current = memory_write(user=user, content="I live in Lyon", memory_type="semantic").memory
    older = memory_write(
        user=user, content="I live in Paris", memory_type="semantic", created_at=now - timedelta(days=400)
    )
    assert older.action == "supersede" and older.memory.superseded_by == current
    assert Memory.objects.get(pk=current.pk).superseded_by is None


def test_bulk_writes_check_each_item_against_the_ones_before(api, user):
    items = [
        {"content": "I live in Paris", "memory_type": "semantic", "created_at": "2024-01-01T00:00:00Z"},
        {"content": "I live in Paris.", "memory_type": "semantic", "created_at": "2024-01-02T00:00:00Z"},
        {"content": "I live in Lyon", "memory_type": "semantic", "created_at": "2025-01-01T00:00:00Z"},
        {"content": "standup at nine", "memory_type": "working", "session_id": "a"},
        {"content": "standup at nine", "memory_type": "working", "session_id": "b"},
    ]
    body = api("post", "/memories/bulk", {"items": items}).json()
    assert body["actions"] == ["add", "duplicate", "supersede", "add", "add"]
    assert body["ids"][0] == body["ids"][1]
    paris = Memory.objects.get(pk=body["ids"][0])
    assert str(paris.superseded_by_id) == body["ids"][2] and paris.seen_count == 2
    assert Memory.objects.filter(user=user).count() == 4
    assert set(Fact.objects.filter(user=user).values_list("value", flat=True)) == {"paris", "lyon"}


def test_events_repeat_only_within_minutes_and_working_memory_within_its_session(user):
    session = session_for_key(user=user, key="s1")
    day = timezone.now() - timedelta(days=3)
    first = memory_write(
        user=user, content="Ran 5 km", memory_type="episodic", session=session, created_at=day
    )
    same = memory_write(
        user=user,
        content="Ran 5 km",
        memory_type="episodic",
        session=session,
        created_at=day + timedelta(minutes=2),
    )
    later = memory_write(
        user=user,
        content="Ran 5 km",
        memory_type="episodic",
        session=session,
        created_at=day + timedelta(days=1),
    )
    assert (same.action, same.memory) == ("duplicate", first.memory)
    assert later.action == "add"
    assert memory_write(user=user, content="hello", session=session).action == "add"
    assert memory_write(user=user, content="hello", session=session).action == "duplicate"
    assert memory_write(user=user, content="hello").action == "add"


def test_the_memory_tool_says_duplicate(user):
    tool = MemoryTool(user_id=user.username)
    first = tool.execute(
        {"action": "add", "content": "My favourite colour is teal", "memory_type": "semantic"}
    )
    again = tool.execute(
        {"action": "add", "content": "My favourite colour is teal", "memory_type": "semantic"}
    )
    assert again.data["action"] == "duplicate" and again.data["id"] == first.data["id"]
    assert "duplicate" in again.text
    newer = tool.execute(
        {"action": "add", "content": "My favourite colour is green", "memory_type": "semantic"}
    )
    assert newer.data["superseded"] == [first.data["id"]]
    found = tool.execute({"action": "search", "query": "favourite colour", "include_superseded": True})
    assert {r["id"] for r in found.data["results"]} == {first.data["id"], newer.data["id"]}
    current = tool.execute({"action": "search", "query": "favourite colour"})
    assert [r["id"] for r in current.data["results"]] == [newer.data["id"]]


def test_the_page_links_a_superseded_fact_to_its_successor_and_reinstates_it(logged_in, user, other_user):
    old = memory_write(user=user, content="My manager is Kofi", memory_type="semantic").memory
    new = memory_write(user=user, content="My manager is Lena", memory_type="semantic").memory
    page = logged_in.get(f"/memories/{old.pk}/").content.decode()
    assert f"/memories/{new.pk}/" in page and "Make current again" in page
    assert "My manager is Kofi" in logged_in.get(f"/memories/{new.pk}/").content.decode()  # "Replaces"
    listing = logged_in.get("/memories/").content.decode()
    assert "superseded" in listing
    logged_in.post(f"/memories/{old.pk}/reinstate/")
    assert Memory.objects.get(pk=old.pk).superseded_by is None
    theirs = memory_write(user=other_user, content="My manager is Ada", memory_type="semantic").memory
    assert logged_in.post(f"/memories/{theirs.pk}/reinstate/").status_code == 404


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I work at Acme", {("user|employer", "acme")}),
        ("Ana's manager is Kofi Mensah", {("ana|manager", "kofi mensah")}),
        ("Ana reports to Lena now", {("ana|manager", "lena")}),
        (
            "I don't like tea any more, I prefer coffee",
            {("user|likes:tea", "no"), ("user|likes:coffee", "yes")},
        ),
        ("我叫小明，我在上海做数据分析", {("user|name", "小明"), ("user|role", "数据分析")}),
        ("李四的经理是王五", {("李四|manager", "王五")}),
        ("我今年28岁", {("user|age", "28")}),
        ("What do I like?", set()),
        ("I have a cat named Mochi", set()),
    ],
)
def test_single_valued_facts_are_read_from_plain_statements(text, expected):
    assert {(slot.key, slot.value) for slot in slots(text)} == expected


def test_the_profile_groups_current_facts_by_kind(api, user, other_user):
    for content in (
        "My name is Ana Silva",
        "I work at Acme",
        "I now work at Globex",
        "My manager is Kofi",
        "I like green tea",
        "The user has a cat named Mochi",
    ):
        memory_write(user=user, content=content, memory_type="semantic")
    memory_write(user=user, content="Went hiking in Sintra", memory_type="episodic")
    memory_write(user=other_user, content="My name is Mallory", memory_type="semantic")
    groups = {
        g["kind"]: [m["content"] for m in g["memories"]] for g in api("get", "/profile").json()["groups"]
    }
    assert groups == {
        "identity": ["My name is Ana Silva"],
        "work": ["My manager is Kofi", "I now work at Globex"],
        "people": ["My manager is Kofi"],  # it states the relation too: Kofi — manager
        "preferences": ["I like green tea"],
        "other": ["The user has a cat named Mochi"],
        "recent": ["Went hiking in Sintra"],
    }


def test_what_do_you_know_about_me_answers_from_the_profile_in_a_new_session(logged_in, user):
    from agents.agent import Agent

    first = session_for_key(user=user, key="day-1")
    Agent(user=user, session=first).run("我叫小明，我在上海做数据分析。I also have a cat named Mochi.")
    for note in ("Quarterly report draft is in the shared drive", "Buy printer paper", "Dentist on Friday"):
        memory_write(user=user, content=note, memory_type="episodic")
    later = session_for_key(user=user, key="day-2")
    for question in ("What do you know about me?", "你对我了解多少？"):
        answer = Agent(user=user, session=later).run(question).text
        for fact in ("用户名叫小明", "用户在上海做数据分析", "The user has a cat named Mochi"):
            assert fact in answer
        assert answer.index("用户名叫小明") < answer.index("Dentist on Friday")  # identity before events
    dashboard = logged_in.get("/").content.decode()
    assert "What Mnemo knows about you" in dashboard and "用户名叫小明" in dashboard


# --- with the (scripted) model ------------------------------------------------------------------------------


def test_the_model_decides_update_and_supersede_as_validated_json(fake_llm, user):
    acme = memory_write(user=user, content="I work at Acme", memory_type="semantic").memory
    cat = memory_write(user=user, content="The user has a cat", memory_type="semantic").memory
    fake_llm.curation_prompts.clear()
    fake_llm.curation_replies = [
        '{"decision": "update", "targets": [0], "text": "The user has a cat named Mochi", "reason": "adds the name"}',
        '```json\n{"decision": "supersede", "targets": [0], "reason": "a new employer"}\n```',
    ]
    merged = memory_write(user=user, content="My cat is called Mochi", memory_type="semantic")
    assert (merged.action, merged.memory.pk) == ("merge", cat.pk)
    cat.refresh_from_db()
    assert cat.content == "The user has a cat named Mochi" and cat.seen_count == 2
    assert any(e.reason == "the model: adds the name" for e in cat.edits.all())
    assert "0. The user has a cat" in fake_llm.curation_prompts[0]

    globex = memory_write(user=user, content="Started at Globex this week", memory_type="semantic")
    assert globex.action == "supersede" and globex.superseded == (acme,)
    assert Memory.objects.get(pk=acme.pk).edits.get().reason == "the model: a new employer"


def test_a_failing_or_invalid_model_falls_back_to_the_offline_rules(fake_llm, user):
    memory_write(user=user, content="I live in Lisbon", memory_type="semantic")
    fake_llm.curation_replies = ['{"decision": "supersede", "targets": [7]}']  # no memory 7: refused
    moved = memory_write(user=user, content="I live in Porto", memory_type="semantic")
    assert moved.action == "supersede" and moved.reason.startswith(
        "offline rules (the model's decision failed"
    )
    fake_llm.mode = "error"
    again = memory_write(user=user, content="I live in Braga", memory_type="semantic")
    assert again.action == "supersede" and "offline rules" in again.reason
    fake_llm.mode = "normal"
    fake_llm.curation_replies = ['{"decision": "ignore", "targets": [0], "reason": "same place"}']
    same = memory_write(user=user, content="Braga is where I live", memory_type="semantic")
    assert same.action == "duplicate" and same.memory.content == "I live in Braga"


# --- cleaning an existing store -----------------------------------------------------------------------------


def seed_unclean(user):
    """A store written before curation: bulk writes with the checks off."""
    items = [
        NewMemory("I live in Paris", "semantic", created_at=timezone.now() - timedelta(days=30)),
        NewMemory("I live in Paris.", "semantic", created_at=timezone.now() - timedelta(days=20)),
        NewMemory("I live in Lyon", "semantic", created_at=timezone.now() - timedelta(days=10)),
        NewMemory("I have a dog named Bao", "semantic", created_at=timezone.now() - timedelta(days=5)),
    ]
    return [w.memory for w in memory_bulk_create(user=user, items=items, curate=False)]


def test_dedupe_dry_run_lists_proposals_and_changes_nothing(api, user):
    from io import StringIO

    from django.core.management import call_command

    paris, paris_again, lyon, _ = seed_unclean(user)
    out = StringIO()
    call_command("dedupe_memories", user.username, "--dry-run", stdout=out)
    assert "merge: “I live in Paris.” merge into “I live in Paris”" in out.getvalue()
    assert "supersede: “I live in Paris” superseded by “I live in Lyon”" in out.getvalue()
    body = api("post", "/memories/dedupe", {"dry_run": True}).json()
    assert [(p["action"], p["memory"]["id"], p["target"]["id"]) for p in body["proposals"]] == [
        ("merge", str(paris_again.pk), str(paris.pk)),
        ("supersede", str(paris.pk), str(lyon.pk)),
    ]
    assert body["queued"] == 0 and not Memory.objects.filter(superseded_by__isnull=False).exists()


def test_proposals_are_approved_rejected_and_undone_on_the_review_page(logged_in, user, other_user):
    from memories.models import Proposal

    paris, paris_again, lyon, _ = seed_unclean(user)
    logged_in.post("/memories/review/find/")
    merge, supersede = Proposal.objects.filter(user=user).order_by("id")
    page = logged_in.get("/memories/review/").content.decode()
    assert "Waiting for review (2)" in page and "<del>" in page and "<ins>" in page
    logged_in.post("/memories/review/bulk/", {"decision": "approve", "ids": [merge.pk, supersede.pk]})
    paris.refresh_from_db()
    paris_again.refresh_from_db()
    assert paris_again.archived_at is not None and paris.seen_count == 2
    assert paris.superseded_by == lyon
    logged_in.post(f"/memories/review/{merge.pk}/undo/")
    logged_in.post(f"/memories/review/{supersede.pk}/undo/")
    paris.refresh_from_db()
    paris_again.refresh_from_db()
    assert paris_again.archived_at is None and paris.seen_count == 1 and paris.superseded_by is None
    # Another user's proposal is out of reach.
    theirs = seed_unclean(other_user)
    Proposal.objects.create(user=other_user, action="merge", memory=theirs[1], target=theirs[0])
    other = Proposal.objects.get(user=other_user)
    assert logged_in.post(f"/memories/review/{other.pk}/approve/").status_code == 404
    assert Proposal.objects.get(pk=other.pk).status == "pending"


def test_the_api_queues_and_decides_proposals(api, user):
    seed_unclean(user)
    queued = api("post", "/memories/dedupe", {"dry_run": False}).json()
    assert queued["queued"] == 2
    pending = api("get", "/memories/proposals").json()["items"]
    assert {p["action"] for p in pending} == {"merge", "supersede"}
    first = pending[0]["id"]
    assert api("post", f"/memories/proposals/{first}/reject").json()["status"] == "rejected"
    assert api("post", f"/memories/proposals/{first}/approve").status_code == 409
    again = api("post", "/memories/dedupe", {"dry_run": False}).json()
    assert again["queued"] == 0  # the rejected one is not proposed again, the pending one not doubled


def test_consolidation_proposes_what_a_promoted_memory_repeats_or_outdates(user):
    from memories.models import Proposal

    memory_write(user=user, content="I live in Lisbon", memory_type="semantic")
    session = session_for_key(user=user, key="s")
    memory_write(user=user, content="I live in Porto", importance=0.9, session=session)
    promoted = memories_consolidate(user=user, from_type="working", to_type="semantic", session=session)
    proposal = Proposal.objects.get(user=user)
    assert (proposal.action, proposal.target) == ("supersede", promoted[0])
    assert proposal.memory.content == "I live in Lisbon" and proposal.memory.superseded_by is None


# --- Issue 32: text typed differently, facts restated in the other language, edits --------------------------


@pytest.mark.parametrize(
    ("first", "again", "action"),
    [
        # Quotes, dashes and full-width forms: the same text, an exact duplicate.
        (
            "Omar’s favourite board game is “Go” – always!",
            'Omar\'s favourite board game is "Go" - always',
            "duplicate",
        ),
        ("Ｍｙ ｖｅｔ ｉｓ Ｄｒ Ｌｉｎｄｑｖｉｓｔ。", "my vet is dr lindqvist", "duplicate"),
        ("用户的「暗号」是‘山竹’——别忘了！", "用户的\"暗号\"是'山竹'-别忘了", "duplicate"),
        # A name with or without its accents: the same value, a repeat and not a newer value.
        ("The user lives in Malmö.", "The user lives in Malmo.", "merge"),
        ("My cat is called Zoe.", "My cat is called Zoë.", "merge"),
        ("Our accountant is Agnès Dubois.", "Our accountant is Agnes Dubois.", "merge"),
    ],
)
def test_text_typed_differently_is_a_repeat_not_a_new_memory_or_value(user, first, again, action):
    stored = memory_write(user=user, content=first, memory_type="semantic")
    repeat = memory_write(user=user, content=again, memory_type="semantic")
    assert repeat.action == action and repeat.memory.pk == stored.memory.pk
    assert [m.pk for m in Memory.objects.filter(user=user)] == [stored.memory.pk]
    assert Memory.objects.get(pk=stored.memory.pk).superseded_by is None


def test_a_name_with_other_letters_is_still_another_value(user):
    memory_write(user=user, content="My cat is called Zoë.", memory_type="semantic")
    renamed = memory_write(user=user, content="My cat is called Chloé.", memory_type="semantic")
    assert renamed.action == curation.SUPERSEDE


def test_a_value_named_more_or_less_closely_is_the_same_fact(user):
    board = memory_write(user=user, content="Omar's favourite board game is Go", memory_type="semantic")
    card = memory_write(user=user, content="Omar's favourite card game is bridge", memory_type="semantic")
    assert card.action == curation.ADD  # another kind of game: both hold
    newer = memory_write(user=user, content="Omar’s favourite game is now chess.", memory_type="semantic")
    assert newer.action == curation.SUPERSEDE
    assert {m.pk for m in newer.superseded} == {board.memory.pk, card.memory.pk}
    assert "omar's favourite game is chess" in newer.reason


def test_a_fact_restated_in_the_other_language_is_a_repeat_and_a_new_value_replaces_it(user):
    vienna = memory_write(user=user, content="The user lives in Vienna.", memory_type="semantic")
    again = memory_write(user=user, content="我住在维也纳。", memory_type="semantic")
    assert again.action == curation.MERGE and again.memory.pk == vienna.memory.pk
    assert Memory.objects.get(pk=vienna.memory.pk).superseded_by is None
    moved = memory_write(user=user, content="我现在住在马德里。", memory_type="semantic")
    assert moved.action == curation.SUPERSEDE and [m.pk for m in moved.superseded] == [vienna.memory.pk]


def test_a_restatement_in_the_other_language_may_put_the_title_after_the_name(user):
    english = memory_write(user=user, content="Our family doctor is Dr. Haugen.", memory_type="semantic")
    chinese = memory_write(user=user, content="我们的家庭医生是Haugen医生。", memory_type="semantic")
    assert chinese.action == curation.MERGE and chinese.memory.pk == english.memory.pk


def test_a_value_the_other_language_may_name_is_neither_replaced_nor_merged(user):
    first = memory_write(user=user, content="The user works at Bramblecote.", memory_type="semantic")
    other = memory_write(user=user, content="我在布兰布科特工作。", memory_type="semantic")
    assert other.action == curation.ADD  # perhaps the same employer, perhaps not: both kept
    assert Memory.objects.get(pk=first.memory.pk).superseded_by is None


def test_swapped_names_and_numbers_are_no_repeat(user):
    memory_write(user=user, content="Elif taught Jonas to sail last summer.", memory_type="semantic")
    swapped = memory_write(
        user=user, content="Jonas taught Elif to sail last summer.", memory_type="semantic"
    )
    assert swapped.action == curation.ADD
    memory_write(user=user, content="阿敏把三本书借给了小周。", memory_type="semantic")
    numbers = memory_write(user=user, content="阿敏把五本书借给了小周。", memory_type="semantic")
    assert numbers.action == curation.ADD


def test_an_edit_that_repeats_another_memory_is_folded_into_it(api, user):
    bees = add(api, "I keep bees in the back garden.").json()
    cider = add(api, "I brew cider every autumn.").json()
    response = api("patch", f"/memories/{cider['id']}", {"content": "I keep bees in the back garden"})
    assert response.status_code == 200 and response.json()["archived_at"] is not None
    kept = Memory.objects.get(pk=bees["id"])
    assert kept.seen_count == 2 and kept.archived_at is None
    folded = MemoryEdit.objects.filter(memory=kept).latest("created_at")
    assert folded.changes["merged"] == [None, "I keep bees in the back garden"]
    assert folded.reason.startswith("edited to repeat another memory")


def test_an_edit_on_the_page_that_states_a_new_value_supersedes_the_old_fact(logged_in, user):
    dentist = memory_write(user=user, content="The user's dentist is Dr Haddad.", memory_type="semantic")
    running = memory_write(user=user, content="I run along the canal.", memory_type="semantic")
    page = logged_in.post(
        f"/memories/{running.memory.pk}/edit/",
        {
            "content": "The user's dentist is now Dr Lindqvist.",
            "memory_type": "semantic",
            "importance": "0.5",
            "session": "",
            "tags": "",
        },
    )
    assert page.status_code == 302
    old = Memory.objects.get(pk=dentist.memory.pk)
    assert old.superseded_by_id == running.memory.pk and old.valid_to is not None
    record = MemoryEdit.objects.get(memory=old, changes__has_key="superseded_by")
    assert "dentist is dr lindqvist" in record.reason


def test_fingerprint_and_lexical_terms_read_one_normalised_text():
    from core.text import fingerprint, lexical_terms, normalise

    assert normalise("Ｎｏｒａ’s “ｂｅｓｔ” idea — ever") == 'Nora\'s "best" idea - ever'
    assert fingerprint("Nora’s plan——v２!") == fingerprint("nora's plan-v2")
    assert lexical_terms("Ｎｏｒａ’s ＫＡＹＡＫ") == lexical_terms("Nora's KAYAK")


def test_finding_duplicates_in_a_store_sees_text_typed_differently(user):
    from memories import cleaning

    items = [
        NewMemory("Nadia's go-to editor is Helix", "semantic", created_at=timezone.now() - timedelta(days=2)),
        NewMemory(
            "Nadia’s go-to editor is Helix!!", "semantic", created_at=timezone.now() - timedelta(days=1)
        ),
        NewMemory("我住在维也纳", "semantic", created_at=timezone.now() - timedelta(hours=5)),
        NewMemory("The user lives in Vienna", "semantic", created_at=timezone.now()),
    ]
    first, again, zh, en = (w.memory for w in memory_bulk_create(user=user, items=items, curate=False))
    drafts = cleaning.propose(user)
    assert [(d.action, d.memory, d.target) for d in drafts] == [("merge", again, first), ("merge", en, zh)]


@pytest.mark.parametrize(
    "existing, new, change",
    [
        (
            "The team's standup is on Tuesdays.",
            "The team's standup is on Thursdays now.",
            ("tuesdays", "thursdays"),
        ),
        ("Our flat has 2 bedrooms", "Our flat has 3 bedrooms now", ("2", "3")),
        ("我每天喝乌龙茶。", "我现在每天喝普洱茶。", ("乌龙茶", "普洱茶")),
        # Not a change: no word says so, the subject changed, a negation, or two statements in two languages.
        ("The team's standup is on Tuesdays.", "The team's standup is on Thursdays.", None),
        ("Priya plays the cello.", "Marek plays the cello now.", None),
        ("我的表哥住在成都。", "我的表姐现在住在成都。", None),
        ("I eat meat.", "I do not eat meat now.", None),
        ("I collect Greek stamps.", "现在我收集日本邮票。", None),
        (
            "The standup is on Tuesdays and the retro on Fridays.",
            "The demo is on Mondays now and on Fridays.",
            None,
        ),
    ],
)
def test_a_value_restated_with_a_change_marker_is_read_as_the_change(existing, new, change):
    from memories.facts import changed_value

    assert changed_value(existing, new) == change


def test_a_restated_fact_with_a_new_value_and_now_supersedes_the_old_one(user):
    """Facts no single-valued slot names: the same statement with one value replaced and "now" / "现在"."""
    tuesdays = memory_write(user=user, content="The team's standup is on Tuesdays.", memory_type="semantic")
    moved = memory_write(user=user, content="The team's standup is on Thursdays now.", memory_type="semantic")
    assert moved.action == "supersede" and moved.superseded == (tuesdays.memory,)
    assert "thursdays in place of tuesdays" in str(moved.reason)
    oolong = memory_write(user=user, content="我每天喝乌龙茶。", memory_type="semantic").memory
    puer = memory_write(user=user, content="我现在每天喝普洱茶。", memory_type="semantic")
    assert puer.action == "supersede" and puer.superseded == (oolong,)
    # Without a word saying it changed, both can hold; someone else's value is no older value of this one.
    memory_write(user=user, content="I collect Greek stamps.", memory_type="semantic")
    assert memory_write(user=user, content="I collect Danish stamps.", memory_type="semantic").action == "add"
    memory_write(user=user, content="Priya plays the cello.", memory_type="semantic")
    assert (
        memory_write(user=user, content="Marek plays the cello now.", memory_type="semantic").action == "add"
    )
    current = set(Memory.objects.current().filter(user=user).values_list("content", flat=True))
    assert "The team's standup is on Tuesdays." not in current and "Priya plays the cello." in current


@pytest.mark.parametrize(
    ("existing", "new", "ended"),
    [
        # More said than a value that may go with it: another fact.
        ("Tariq keeps bees with his uncle in the back garden.", "Tariq no longer keeps bees.", False),
        ("Tariq keeps bees.", "Tariq no longer keeps bees.", True),
        ("The user rides a Vespa scooter.", "The user no longer rides the Vespa.", True),
        ("I'm a member of the rowing club.", "I am not a member of the rowing club anymore.", True),
        ("我养了一只鹦鹉。", "我不再养鹦鹉了。", True),
        # Not an end: it already denied it, another subject, another verb, another language, or a question.
        ("I don't drink coffee.", "I no longer drink coffee.", False),
        ("我不喝咖啡。", "我不再喝咖啡了。", False),
        ("Ines rides a Vespa.", "Tariq no longer rides a Vespa.", False),
        ("I ride a Vespa.", "I no longer repair the Vespa.", False),
        ("我养了一只鹦鹉。", "I no longer keep a parrot.", False),
        ("I ride a Vespa.", "Do I no longer ride a Vespa?", False),
    ],
)
def test_a_fact_said_to_hold_no_longer_is_read_as_its_end(existing, new, ended):
    from memories.facts import ended_fact

    assert ended_fact(existing, new) is ended


def test_a_fact_said_to_hold_no_longer_supersedes_it(user):
    """The end of a fact no slot names ("no longer", "不再") is a newer state of it, as "now" is."""
    vespa = memory_write(user=user, content="The user rides a Vespa scooter.", memory_type="semantic").memory
    ended = memory_write(user=user, content="The user no longer rides the Vespa.", memory_type="semantic")
    assert ended.action == "supersede" and ended.superseded == (vespa,)
    assert "no longer holds" in str(ended.reason)
    parrot = memory_write(user=user, content="我养了一只鹦鹉。", memory_type="semantic").memory
    assert memory_write(user=user, content="我不再养鹦鹉了。", memory_type="semantic").superseded == (parrot,)
    # Saying again what was denied is no end of it.
    memory_write(user=user, content="I don't drink coffee.", memory_type="semantic")
    assert (
        memory_write(user=user, content="I no longer drink coffee.", memory_type="semantic").superseded == ()
    )


def test_an_api_edit_that_restates_a_fact_with_a_new_value_and_now_supersedes_it(api, user):
    choir = add(api, "Rehearsals for the choir are in the church hall.").json()
    chess = add(api, "I play chess online most evenings.").json()
    response = api(
        "patch", f"/memories/{chess['id']}", {"content": "Rehearsals for the choir are in the library now."}
    )
    assert response.status_code == 200
    old = Memory.objects.get(pk=choir["id"])
    assert str(old.superseded_by_id) == chess["id"] and old.valid_to is not None
    record = MemoryEdit.objects.get(memory=old, changes__has_key="superseded_by")
    assert "library in place of church hall" in record.reason
