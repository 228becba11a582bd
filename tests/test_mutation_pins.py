"""Rules a mutation probe could change without failing a test (issue 34 item 2), each pinned on invented text:
knowledge search's filter of unrelated chunks, and three rules of the fact readers (memories.facts,
memories.statements). The ranking's numbers are pinned against the report that chose them
(tests/test_ranking_report.py)."""

import pytest

from knowledge.search import search_chunks
from knowledge.tools import RAGTool
from memories.facts import Slot, slots
from memories.statements import statements


@pytest.mark.django_db(transaction=True)
def test_knowledge_search_returns_no_chunk_for_a_question_no_model_finds_related(django_user_model):
    """The nearest chunk always stands out among a query's candidates; only the models' noise floors say it is
    not near at all. Without that filter, a question about nothing stored would bring back a greenhouse."""
    user = django_user_model.objects.create_user("gardener")
    rag = RAGTool(rag_namespace="default", user_id=user.get_username())
    for name, text in {
        "greenhouse": "The greenhouse vents open automatically when the air inside passes 27 degrees.",
        "compost": "Turn the compost heap every ten days and keep it as damp as a wrung sponge.",
    }.items():
        assert rag.run({"action": "add_text", "text": text, "document_id": name}).startswith("✅")
    related = search_chunks(user=user, query="When do the greenhouse vents open?", limit=5)
    assert [hit.chunk.document.title for hit in related.hits][:1] == ["greenhouse"]
    unrelated = search_chunks(user=user, query="Quelle est la capitale de la Mongolie ?", limit=5)
    assert unrelated.hits == []


def test_a_named_person_driving_a_car_fills_their_car_slot():
    assert slots("Henrike drives a dented orange Trabant.") == [
        Slot(subject="henrike", attribute="car", value="dented orange trabant")
    ]
    assert slots("I drive the company's grey van") == [
        Slot(subject="user", attribute="car", value="company's grey van")
    ]


def test_he_or_she_in_chinese_is_nobody_known_so_no_fact_is_filed_for_the_user():
    """他/她 name someone of the conversation, not the user: "他住在…" must not become the user's home."""
    assert slots("我住在拉萨。") == [Slot(subject="user", attribute="home", value="拉萨")]
    assert slots("我的经理是宋立。") == [Slot(subject="user", attribute="manager", value="宋立")]
    assert slots("他的经理是宋立。") == []
    assert slots("她的丈夫是郭磊") == []
    assert slots("他住在拉萨。") == []


@pytest.mark.parametrize(
    "message",
    [
        "I think tabs are better than spaces",  # an opinion
        "I guess the ferry leaves at noon",
        "I'd like you to draft the invitation",  # requests
        "I need you to water the ferns while I'm away",
        "I wonder whether the museum opens on Mondays",
    ],
)
def test_opinions_and_requests_in_chat_state_no_lasting_fact(message):
    assert statements(message) == []


def test_a_lasting_statement_in_chat_is_kept_in_the_third_person():
    assert statements("I keep three beehives behind the barn") == [
        "The user keeps three beehives behind the barn"
    ]
