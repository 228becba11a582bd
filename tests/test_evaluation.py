"""Retrieval evaluation: golden questions, runs scored against the real search, the pages, the API and the command.

The memories below are chosen so the outcome does not hang on fine ranking details: each answerable question
names its memory's own words (rank 1 by every signal), and a miss is made certain by archiving the expected
memory, which takes it out of search. A no-answer question returns nothing for sure only where there is nothing
to return (a namespace without documents); one that quotes a memory returns something for sure.
"""

from dataclasses import replace

import pytest
from django.core.management import call_command, execute_from_command_line
from django.core.management.base import CommandError
from django.urls import reverse

from console import evaluation, metrics
from console.models import EvaluationRun, GoldenQuestion
from core import ranking
from core.services import api_key_create
from knowledge.models import Chunk
from knowledge.services import document_create_from_text
from memories.actions.edit import memory_archive
from memories.actions.forgetting import memories_delete
from memories.actions.write import memory_create
from memories.models import Memory

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HTTP_HX_REQUEST": "true"}

GUIDE = """# Mnemo guide

## Install

Run `make run` to create the virtualenv and start the server.

## 检索

Mnemo 把每个文档切成带标题路径的分块，然后同时用向量和关键词检索。
"""


@pytest.fixture
def memories(user) -> dict[str, Memory]:
    return {
        "meeting": memory_create(
            user=user, content="The team meeting is in Berlin on Tuesday", memory_type="episodic"
        ),
        "tea": memory_create(
            user=user, content="Alice prefers green tea over coffee", memory_type="semantic"
        ),
        "backups": memory_create(
            user=user, content="The server backups run every night at two", memory_type="semantic"
        ),
    }


def three_questions(user, memories) -> list[GoldenQuestion]:
    """Two that search finds at rank 1, one whose answer is archived (so search cannot find it)."""
    memory_archive(memory=memories["backups"], via="page")
    return [
        evaluation.question_create(
            user=user, text="Where is the team meeting?", expected_memory_ids=[memories["meeting"].pk]
        ),
        evaluation.question_create(
            user=user, text="What does Alice drink?", expected_memory_ids=[memories["tea"].pk]
        ),
        evaluation.question_create(
            user=user, text="When do the server backups run?", expected_memory_ids=[memories["backups"].pk]
        ),
    ]


# --- metrics --------------------------------------------------------------------------------------------------


def test_summarise_scores_ranks_exactly():
    outcomes = [
        metrics.Outcome(False, 1, 10),
        metrics.Outcome(False, 2, 10),
        metrics.Outcome(False, None, 10),
        metrics.Outcome(False, 4, 10),
        metrics.Outcome(True, None, 0),
        metrics.Outcome(True, None, 3),
        metrics.Outcome(True, None, 0),
    ]
    summary = metrics.summarise(outcomes)
    assert summary == {
        "answerable": 4,
        "no_answer": 3,
        "hit_at_1": 1 / 4,
        "hit_at_3": 2 / 4,
        "hit_at_10": 3 / 4,
        "mrr": (1 + 1 / 2 + 0 + 1 / 4) / 4,
        "no_answer_empty": 2 / 3,
    }
    assert metrics.summarise([])["hit_at_1"] is None
    assert metrics.deltas({"hit_at_1": 0.5, "mrr": None}, {"hit_at_1": 0.25, "mrr": 0.1})["hit_at_1"] == 0.25
    assert metrics.deltas({"hit_at_1": 0.5, "mrr": None}, {"hit_at_1": 0.25, "mrr": 0.1})["mrr"] is None


def test_a_run_scores_a_hand_made_case_exactly(user, memories):
    questions = three_questions(user, memories)
    # Nothing to return: a namespace without documents. And a no-answer question that quotes a memory.
    empty = evaluation.question_create(
        user=user,
        text="What is in the empty shelf?",
        target="knowledge",
        namespaces=["empty"],
        no_answer=True,
    )
    quoted = evaluation.question_create(user=user, text="team meeting in Berlin", no_answer=True)
    # Its only answer deleted: shown as needing answers and skipped, not scored as a miss.
    gone = memory_create(user=user, content="a memory that will be deleted", memory_type="semantic")
    orphan = evaluation.question_create(user=user, text="What was deleted?", expected_memory_ids=[gone.pk])
    memories_delete(user=user, memory_ids=[gone.pk])

    run = evaluation.evaluation_run(user=user)

    assert (run.question_count, run.skipped_count) == (5, 1)
    overall = run.summary["overall"]
    assert (overall["answerable"], overall["no_answer"]) == (3, 2)
    assert overall["hit_at_1"] == pytest.approx(2 / 3)
    assert overall["hit_at_3"] == pytest.approx(2 / 3)
    assert overall["hit_at_10"] == pytest.approx(2 / 3)
    assert overall["mrr"] == pytest.approx(2 / 3)
    assert overall["no_answer_empty"] == pytest.approx(1 / 2)
    # Per memory type of the expected answer: the meeting is episodic, tea and backups semantic.
    assert run.summary["by_type"]["episodic"]["hit_at_1"] == 1.0
    assert run.summary["by_type"]["semantic"]["hit_at_1"] == pytest.approx(1 / 2)
    # Each signal alone: every one finds the two quoted memories first and cannot find the archived one; a dense
    # signal ranks every point, so only the empty namespace gives "nothing" for a no-answer question.
    assert set(run.summary["by_signal"]) == {"minilm", "use", "bge_zh", "lexical"}
    for signal in run.summary["by_signal"].values():
        assert signal["hit_at_1"] == pytest.approx(2 / 3)
        assert signal["no_answer_empty"] == pytest.approx(1 / 2)
    assert set(run.summary["by_target"]) == {"memories", "knowledge"}

    by_question = {result["question_id"]: result for result in run.results}
    assert orphan.pk not in by_question
    assert by_question[questions[0].pk]["rank"] == 1
    assert by_question[questions[0].pk]["top"][0]["id"] == str(memories["meeting"].pk)
    assert by_question[questions[1].pk]["top"][0]["id"] == str(memories["tea"].pk)
    assert by_question[questions[2].pk]["rank"] is None
    assert str(memories["backups"].pk) not in [item["id"] for item in by_question[questions[2].pk]["top"]]
    assert by_question[empty.pk]["returned"] == 0
    assert by_question[quoted.pk]["returned"] >= 1
    assert run.settings["embedding"].startswith("local:")
    assert run.settings["ranking"] == ranking.RANKING.snapshot()  # every number of the ranking, whole
    assert run.settings["limit"] == 10


def test_a_knowledge_question_is_scored_against_chunk_search(user):
    document_create_from_text(user=user, text=GUIDE, title="Mnemo guide", namespace="docs")
    chunk = Chunk.objects.get(user=user, heading_path="Mnemo guide > 检索")
    question = evaluation.question_create(
        user=user, text="向量和关键词检索", target="knowledge", expected_chunk_ids=[chunk.pk]
    )
    assert question.namespaces == ["docs"]  # taken from the expected chunk

    run = evaluation.evaluation_run(user=user, scope="knowledge")

    assert run.summary["overall"]["hit_at_1"] == 1.0
    assert run.results[0]["top"][0]["id"] == str(chunk.pk)
    assert run.results[0]["top"][0]["text"].startswith("Mnemo guide #")


def test_there_is_nothing_to_run_without_questions(user, memories):
    with pytest.raises(evaluation.EvaluationError, match="no golden question"):
        evaluation.evaluation_run(user=user)
    assert EvaluationRun.objects.count() == 0


# --- golden questions belong to one user ------------------------------------------------------------------------


def test_another_users_memory_or_chunk_is_refused_and_nothing_is_stored(user, other_user, memories):
    theirs = memory_create(user=other_user, content="mallory's secret plan", memory_type="semantic")
    document_create_from_text(user=other_user, text=GUIDE, title="their guide")
    their_chunk = Chunk.objects.filter(user=other_user).first()

    with pytest.raises(evaluation.EvaluationError, match=f"no memory of yours has the id {theirs.pk}"):
        evaluation.question_create(
            user=user, text="plan?", expected_memory_ids=[memories["tea"].pk, theirs.pk]
        )
    with pytest.raises(evaluation.EvaluationError, match="no chunk of yours"):
        evaluation.question_create(
            user=user, text="guide?", target="knowledge", expected_chunk_ids=[their_chunk.pk]
        )
    with pytest.raises(evaluation.EvaluationError, match="expects memories, not chunks"):
        evaluation.question_create(user=user, text="mixed?", expected_chunk_ids=[their_chunk.pk])
    with pytest.raises(evaluation.EvaluationError, match="not an id"):
        evaluation.question_create(user=user, text="typo?", expected_memory_ids=["not-a-uuid"])
    with pytest.raises(evaluation.EvaluationError, match="expect at least one answer"):
        evaluation.question_create(user=user, text="nothing expected?")
    assert GoldenQuestion.objects.count() == 0


def test_an_invalid_change_changes_nothing(user, other_user, memories):
    question = evaluation.question_create(
        user=user,
        text="Where is the team meeting?",
        expected_memory_ids=[memories["meeting"].pk],
        note="kept",
    )
    theirs = memory_create(user=other_user, content="mallory's secret plan", memory_type="semantic")
    with pytest.raises(evaluation.EvaluationError):
        evaluation.question_update(
            question=question, text="changed text", expected_memory_ids=[theirs.pk], note="lost?"
        )
    with pytest.raises(evaluation.EvaluationError, match="cannot also expect answers"):
        evaluation.question_update(question=question, no_answer=True)
    question.refresh_from_db()
    assert (question.text, question.note, question.no_answer) == ("Where is the team meeting?", "kept", False)
    assert question.expected_ids() == {str(memories["meeting"].pk)}


def test_a_deleted_answer_drops_out_and_the_question_needs_answers(user, memories):
    question = evaluation.question_create(
        user=user, text="Alice and tea", expected_memory_ids=[memories["tea"].pk, memories["meeting"].pk]
    )
    memories_delete(user=user, memory_ids=[memories["meeting"].pk])
    question = GoldenQuestion.objects.get(pk=question.pk)
    assert question.expected_ids() == {str(memories["tea"].pk)}
    assert not question.needs_answers
    memories_delete(user=user, memory_ids=[memories["tea"].pk])
    assert GoldenQuestion.objects.get(pk=question.pk).needs_answers
    # It can still be edited; giving it answers or "no answer expected" is what brings it back.
    evaluation.question_update(question=question, note="answers gone")
    with pytest.raises(evaluation.EvaluationError, match="expect at least one answer"):
        evaluation.question_update(question=question, expected_memory_ids=[])
    evaluation.question_update(question=question, no_answer=True)
    assert not GoldenQuestion.objects.get(pk=question.pk).needs_answers


def test_a_knowledge_answer_outside_the_questions_namespaces_is_refused(user):
    document_create_from_text(user=user, text=GUIDE, title="Mnemo guide", namespace="docs")
    chunk = Chunk.objects.filter(user=user).first()
    with pytest.raises(
        evaluation.EvaluationError, match="namespace docs, which the question does not search"
    ):
        evaluation.question_create(
            user=user,
            text="install?",
            target="knowledge",
            expected_chunk_ids=[chunk.pk],
            namespaces=["other"],
        )
    with pytest.raises(evaluation.EvaluationError, match="namespaces apply to knowledge questions only"):
        evaluation.question_create(user=user, text="install?", namespaces=["docs"])


# --- runs are kept and compared --------------------------------------------------------------------------------


def test_runs_are_kept_newest_first_and_show_the_difference(user, memories, logged_in):
    three_questions(user, memories)
    first = evaluation.evaluation_run(user=user)
    # The data changes: the archived answer is back in search.
    memory_archive(memory=Memory.objects.get(pk=memories["backups"].pk), via="page", archived=False)
    second = evaluation.evaluation_run(user=user)

    assert list(EvaluationRun.objects.for_user(user)) == [second, first]
    assert second.previous() == first and first.previous() is None
    assert first.summary["overall"]["hit_at_1"] == pytest.approx(2 / 3)
    assert second.summary["overall"]["hit_at_1"] == 1.0
    view = evaluation.run_view(second, second.previous())
    assert view.deltas["hit_at_1"] == pytest.approx(1 / 3)
    assert not view.settings_changed

    page = logged_in.get(reverse("evaluation")).content.decode()
    assert f"Run #{second.pk}</a>" in page
    assert "+0.333" in page  # hit@1 and MRR went up by a third
    assert page.index(f">#{second.pk}<") < page.index(f">#{first.pk}<")  # history, newest first
    detail = logged_in.get(reverse("evaluation_run", args=[first.pk]))
    assert detail.status_code == 200
    assert "When do the server backups run?" in detail.content.decode()
    assert "not in top 10" in detail.content.decode()


def test_a_change_of_settings_is_flagged(user, memories, monkeypatch):
    three_questions(user, memories)
    evaluation.evaluation_run(user=user)
    monkeypatch.setattr("core.ranking.RANKING", replace(ranking.RANKING, recency_weight=0.7))
    run = evaluation.evaluation_run(user=user)
    assert run.settings["ranking"]["recency_weight"] == 0.7
    assert evaluation.run_view(run, run.previous()).settings_changed


# --- the command ------------------------------------------------------------------------------------------------


def test_the_command_exits_1_under_a_threshold_and_0_over_it(user, memories, capsys):
    three_questions(user, memories)  # hit@1 = MRR = 2/3
    with pytest.raises(SystemExit) as exited:
        execute_from_command_line(["manage.py", "evaluate_retrieval", "alice", "--min-hit1", "0.7"])
    assert exited.value.code == 1
    assert "hit@1 0.667 is below --min-hit1 0.700" in capsys.readouterr().err

    call_command("evaluate_retrieval", "alice", "--min-hit1", "0.6", "--min-mrr", "0.6")  # no SystemExit
    out = capsys.readouterr().out
    assert "Retrieval meets the thresholds." in out
    assert "overall" in out and "0.667" in out
    assert EvaluationRun.objects.count() == 2  # a failing run is stored too: it is history

    with pytest.raises(CommandError, match="MRR 0.667 is below --min-mrr 0.900"):
        call_command("evaluate_retrieval", "alice", "--min-mrr", "0.9", "--target", "memories")
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        call_command("evaluate_retrieval", "nobody")


# --- pages ------------------------------------------------------------------------------------------------------


def test_the_answer_button_creates_then_extends_a_golden_question(logged_in, user, memories):
    page = logged_in.get(reverse("memory_list"), {"q": "Berlin meeting"}).content.decode()
    assert "✓ right answer" in page
    assert 'name="q" value="Berlin meeting"' in page

    url = reverse("evaluation_answer_mark")
    response = logged_in.post(
        url, {"target": "memories", "q": "Berlin meeting", "answer": memories["meeting"].pk}, **HTMX
    )
    assert response.status_code == 200
    assert "✓ saved" in response.content.decode()
    assert "<html" not in response.content.decode()
    question = GoldenQuestion.objects.get(user=user, text="Berlin meeting")
    assert question.expected_ids() == {str(memories["meeting"].pk)}

    logged_in.post(url, {"target": "memories", "q": "Berlin meeting", "answer": memories["tea"].pk}, **HTMX)
    assert GoldenQuestion.objects.get(pk=question.pk).expected_ids() == {
        str(memories["meeting"].pk),
        str(memories["tea"].pk),
    }
    assert GoldenQuestion.objects.count() == 1


def test_the_answer_button_refuses_another_users_memory(logged_in, other_user):
    theirs = memory_create(user=other_user, content="mallory's secret plan", memory_type="semantic")
    response = logged_in.post(
        reverse("evaluation_answer_mark"), {"target": "memories", "q": "plan", "answer": theirs.pk}, **HTMX
    )
    assert response.status_code == 422
    assert "no memory of yours" in response.content.decode()
    assert GoldenQuestion.objects.count() == 0


def test_the_answer_button_on_knowledge_results_keeps_the_namespaces(logged_in, user):
    document_create_from_text(user=user, text=GUIDE, title="Mnemo guide", namespace="docs")
    page = logged_in.get(reverse("knowledge_search"), {"q": "向量和关键词检索"}).content.decode()
    assert 'name="namespaces" value="docs"' in page
    chunk = Chunk.objects.get(user=user, heading_path="Mnemo guide > 检索")
    cited = logged_in.get(reverse("knowledge_ask"), {"q": "向量和关键词检索"}).content.decode()
    assert f'name="answer" value="{chunk.pk}"' in cited  # "Ask" citations carry the button too
    response = logged_in.post(
        reverse("evaluation_answer_mark"),
        {"target": "knowledge", "q": "向量和关键词检索", "answer": chunk.pk, "namespaces": "docs"},
        **HTMX,
    )
    assert response.status_code == 200
    question = GoldenQuestion.objects.get(user=user)
    assert (question.target, question.namespaces, question.expected_ids()) == (
        "knowledge",
        ["docs"],
        {str(chunk.pk)},
    )


def test_add_edit_and_delete_a_question_on_the_page(logged_in, user, memories):
    add = reverse("evaluation_question_add")
    response = logged_in.post(
        add,
        {"text": "Where is the meeting?", "target": "memories", "pasted": f"{memories['meeting'].pk}\n"},
        **HTMX,
        HTTP_HX_TARGET="questions",
    )
    assert response.status_code == 200
    assert "Where is the meeting?" in response.content.decode()
    question = GoldenQuestion.objects.get(user=user)
    assert question.expected_ids() == {str(memories["meeting"].pk)}

    # A duplicate is refused with the reason; the form keeps what was typed.
    response = logged_in.post(
        add, {"text": "Where is the meeting?", "target": "memories", "picked": [memories["tea"].pk]}, **HTMX
    )
    assert response.status_code == 422
    assert "already have a golden question" in response.content.decode()
    assert 'value="Where is the meeting?"' in response.content.decode()
    assert f'value="{memories["tea"].pk}" form="question-form" checked' in response.content.decode()
    assert GoldenQuestion.objects.count() == 1

    edit = reverse("evaluation_question_edit", args=[question.pk])
    assert str(memories["meeting"].pk) in logged_in.get(edit, **HTMX).content.decode()
    response = logged_in.post(
        edit,
        {"text": "Where is the team meeting?", "target": "memories", "pasted": str(memories["tea"].pk)},
        **HTMX,
    )
    assert response.status_code == 200
    assert "Saved" in response.content.decode()
    question.refresh_from_db()
    assert (question.text, question.expected_ids()) == (
        "Where is the team meeting?",
        {str(memories["tea"].pk)},
    )

    response = logged_in.post(reverse("evaluation_question_delete", args=[question.pk]), **HTMX)
    assert response.status_code == 200
    assert GoldenQuestion.objects.count() == 0


def test_the_picker_finds_my_memories_and_keeps_ticked_ones(logged_in, user, other_user, memories):
    memory_create(user=other_user, content="Mallory drinks green tea too", memory_type="semantic")
    response = logged_in.get(
        reverse("evaluation_answer_picker"),
        {"target": "memories", "pick_q": "green tea", "picked": [str(memories["meeting"].pk)]},
        **HTMX,
    )
    html = response.content.decode()
    assert "Alice prefers green tea over coffee" in html
    assert "Mallory" not in html
    assert f'value="{memories["meeting"].pk}" form="question-form" checked' in html

    picker = reverse("evaluation_answer_picker")
    no_documents = logged_in.get(picker, {"target": "knowledge", "pick_q": "green tea"}, **HTMX)
    assert "Nothing matches “green tea”" in no_documents.content.decode()
    document_create_from_text(user=user, text=GUIDE, title="Mnemo guide", namespace="docs")
    chunks = logged_in.get(picker, {"target": "knowledge", "pick_q": "向量和关键词检索"}, **HTMX)
    assert "Mnemo guide #1 (docs)" in chunks.content.decode()


def test_run_from_the_page_and_see_its_table(logged_in, user, memories):
    three_questions(user, memories)
    response = logged_in.post(
        reverse("evaluation_run_create"), {"scope": "all"}, **HTMX, HTTP_HX_TARGET="runs"
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html
    run = EvaluationRun.objects.get(user=user)
    assert f"Run #{run.pk}" in html
    assert "Fused search (the product)" in html and "0.667" in html
    assert "Each signal alone" in html and "By memory type" in html


def test_a_run_without_questions_says_why(logged_in):
    response = logged_in.post(reverse("evaluation_run_create"), **HTMX)
    assert response.status_code == 422
    assert "no golden question to run" in response.content.decode()


def test_another_users_questions_and_runs_are_not_found(logged_in, other_user):
    theirs = memory_create(user=other_user, content="mallory's secret plan", memory_type="semantic")
    question = evaluation.question_create(user=other_user, text="plan?", expected_memory_ids=[theirs.pk])
    run = evaluation.evaluation_run(user=other_user)
    assert logged_in.get(reverse("evaluation_run", args=[run.pk])).status_code == 404
    assert logged_in.post(reverse("evaluation_question_delete", args=[question.pk])).status_code == 404
    assert logged_in.get(reverse("evaluation_question_edit", args=[question.pk])).status_code == 404
    assert "plan?" not in logged_in.get(reverse("evaluation")).content.decode()
    assert GoldenQuestion.objects.filter(pk=question.pk).exists()


# --- API --------------------------------------------------------------------------------------------------------


def test_api_questions_and_runs(api, user, memories):
    response = api(
        "post",
        "/evaluation/questions",
        {"text": "Where is the team meeting?", "expected_memory_ids": [str(memories["meeting"].pk)]},
    )
    assert response.status_code == 201
    question = response.json()
    assert question["expected_memory_ids"] == [str(memories["meeting"].pk)]
    assert question["needs_answers"] is False

    response = api("patch", f"/evaluation/questions/{question['id']}", {"note": "from the API"})
    assert (response.status_code, response.json()["note"]) == (200, "from the API")
    assert api("get", "/evaluation/questions").json()["count"] == 1

    response = api("post", "/evaluation/runs", {"scope": "memories"})
    assert response.status_code == 201
    run = response.json()
    assert run["summary"]["overall"]["hit_at_1"] == 1.0
    assert run["results"][0]["rank"] == 1
    assert run["previous_id"] is None
    second = api("post", "/evaluation/runs", {}).json()
    assert second["scope"] == "all"
    listed = api("get", "/evaluation/runs").json()
    assert [item["id"] for item in listed] == [second["id"], run["id"]]
    assert (
        api("get", f"/evaluation/runs/{run['id']}").json()["results"][0]["text"]
        == "Where is the team meeting?"
    )

    assert api("delete", f"/evaluation/questions/{question['id']}").status_code == 204
    assert api("get", f"/evaluation/questions/{question['id']}").status_code == 404


def test_api_refuses_bad_input_with_422_and_keeps_what_was_stored(api, user, other_user, memories):
    theirs = memory_create(user=other_user, content="mallory's secret plan", memory_type="semantic")
    created = api(
        "post", "/evaluation/questions", {"text": "tea?", "expected_memory_ids": [str(memories["tea"].pk)]}
    ).json()

    response = api(
        "patch",
        f"/evaluation/questions/{created['id']}",
        {"text": "x", "expected_memory_ids": [str(theirs.pk)]},
    )
    assert response.status_code == 422
    assert response.json()["detail"] == f"no memory of yours has the id {theirs.pk}"
    stored = api("get", f"/evaluation/questions/{created['id']}").json()
    assert (stored["text"], stored["expected_memory_ids"]) == ("tea?", [str(memories["tea"].pk)])

    assert (
        api("post", "/evaluation/questions", {"text": "x", "expected_memory_ids": ["nope"]}).status_code
        == 422
    )
    assert api("post", "/evaluation/questions", {"text": "x", "target": "dreams"}).status_code == 422
    assert api("post", "/evaluation/runs", {"scope": "knowledge"}).status_code == 422  # no knowledge question
    assert api("get", "/evaluation/runs/999999").status_code == 404


def test_another_users_questions_and_runs_are_404_over_the_api(api, other_user):
    theirs = memory_create(user=other_user, content="mallory's secret plan", memory_type="semantic")
    question = evaluation.question_create(user=other_user, text="plan?", expected_memory_ids=[theirs.pk])
    run = evaluation.evaluation_run(user=other_user)
    assert api("get", f"/evaluation/questions/{question.pk}").status_code == 404
    assert api("patch", f"/evaluation/questions/{question.pk}", {"note": "mine now"}).status_code == 404
    assert api("delete", f"/evaluation/questions/{question.pk}").status_code == 404
    assert api("get", f"/evaluation/runs/{run.pk}").status_code == 404
    assert api("get", "/evaluation/runs").json() == []
    assert GoldenQuestion.objects.get(pk=question.pk).note == ""


def test_a_read_only_key_gets_403_on_writes(api, user, memories, read_key):
    question = evaluation.question_create(
        user=user, text="Where is the team meeting?", expected_memory_ids=[memories["meeting"].pk]
    )
    writes = [
        ("post", "/evaluation/questions", {"text": "new?"}),
        ("patch", f"/evaluation/questions/{question.pk}", {"note": "changed"}),
        ("delete", f"/evaluation/questions/{question.pk}", None),
        ("post", "/evaluation/runs", {}),
    ]
    for method, path, body in writes:
        response = api(method, path, body, key=read_key)
        assert response.status_code == 403, (method, path)
        assert "read-only" in response.json()["detail"]
    assert api("get", "/evaluation/questions", key=read_key).status_code == 200
    assert api("get", "/evaluation/runs", key=read_key).status_code == 200
    assert GoldenQuestion.objects.get(pk=question.pk).note == ""
    assert EvaluationRun.objects.count() == 0


def test_a_key_of_another_user_sees_only_its_own(client, user, memories, other_user):
    evaluation.question_create(user=user, text="mine?", expected_memory_ids=[memories["tea"].pk])
    key = api_key_create(user=other_user, name="mallory")[1]
    response = client.get("/api/v1/evaluation/questions", HTTP_X_API_KEY=key)
    assert response.json()["count"] == 0
