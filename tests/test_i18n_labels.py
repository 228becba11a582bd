"""Choice labels and refusals on Chinese pages: a memory's type, a document's status, a proposal's action and a
graph edit's entity types are shown in the page's language, while values, CSS classes and links keep the
stored English value."""

from django.urls import reverse

from knowledge.models import Document, DocumentStatus
from memories.actions.write import memory_create
from memories.models import Entity, GraphAction, GraphEdit, Proposal, ProposalAction

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}


def test_a_memory_type_is_translated_on_the_chinese_list_and_detail_pages(logged_in, user):
    memory = memory_create(user=user, content="Walked the harbour wall at dawn", memory_type="episodic")
    listing = logged_in.get(reverse("memory_list"), **ZH).text
    assert '<span class="tag type-episodic">情景</span>' in listing
    detail = logged_in.get(reverse("memory_detail", args=[memory.pk]), **ZH).text
    assert '<span class="tag type-episodic">情景</span>' in detail


def test_a_memory_type_stays_english_by_default(logged_in, user):
    memory_create(user=user, content="Walked the harbour wall at dawn", memory_type="semantic")
    assert '<span class="tag type-semantic">semantic</span>' in logged_in.get(reverse("memory_list")).text


def test_a_document_status_is_translated_on_the_chinese_library_page(logged_in, user):
    Document.objects.create(user=user, title="Tide tables", sha256="t1", status=DocumentStatus.QUEUED)
    Document.objects.create(user=user, title="Pier notes", sha256="t2", status=DocumentStatus.READY)
    chinese = logged_in.get(reverse("library"), **ZH).text
    assert '<span class="badge status-queued">排队中</span>' in chinese
    assert '<span class="badge status-ready">就绪</span>' in chinese
    english = logged_in.get(reverse("library")).text
    assert '<span class="badge status-queued">queued</span>' in english


def test_a_proposal_and_a_graph_edit_are_labelled_in_chinese(logged_in, user):
    older = memory_create(user=user, content="The ferry leaves at nine", memory_type="semantic")
    newer = memory_create(user=user, content="The ferry leaves at ten", memory_type="semantic")
    Proposal.objects.create(
        user=user, action=ProposalAction.SUPERSEDE, memory=older, target=newer, reason="x"
    )
    review = logged_in.get(reverse("memory_review"), **ZH).text
    assert '<span class="tag state">取代</span>' in review

    entity = Entity.objects.create(user=user, name="Harbour Co", key="harbour co", entity_type="ORG")
    GraphEdit.objects.create(
        user=user,
        entity_id=entity.pk,
        action=GraphAction.RETYPE,
        via="page",
        label="Harbour Co",
        changes={"entity_type": ["PERSON", "ORG"]},
    )
    panel = logged_in.get(reverse("graph_entity_memories", args=[entity.pk]), **ZH).text
    assert "已改类型 Harbour Co" in panel
    assert ": 人物 → 组织" in panel
    english = logged_in.get(reverse("graph_entity_memories", args=[entity.pk])).text
    assert ": person → organisation" in english
