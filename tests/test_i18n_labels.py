"""Choice labels and refusals on Chinese pages: a memory's type, a document's status, a proposal's action and a
graph edit's entity types are shown in the page's language, while values, CSS classes and links keep the
stored English value."""

import pytest
from django.urls import reverse
from django.utils import translation

from core.limits import InputRejected, check_text
from knowledge.models import Document, DocumentStatus
from memories.actions.edit import memory_update
from memories.actions.write import memory_create
from memories.models import EditVia, Entity, GraphAction, GraphEdit, MemoryEdit, Proposal, ProposalAction

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


def test_a_refused_restore_is_explained_in_chinese_on_the_page(logged_in, user):
    memory = memory_create(user=user, content="one", memory_type="semantic")
    edit = memory_update(memory=memory, via=EditVia.PAGE, content="two") and MemoryEdit.objects.get()
    memory_update(memory=memory, via=EditVia.PAGE, content="one")
    url = reverse("memory_restore_version", args=[memory.pk, edit.pk])
    page = logged_in.post(url, follow=True, **ZH).text
    assert "记忆已与该版本相同：没有可恢复的内容" in page
    assert "already reads like" not in page
    english = logged_in.post(url, follow=True).text
    assert "Not restored: the memory already reads like that version: there is nothing to restore." in english


def test_a_refusal_of_a_memory_action_is_chinese_in_a_chinese_tool_reply(api):
    body = {"action": "consolidate", "from_type": "working", "to_type": "working"}
    chinese = api("post", "/tools/memory", {**body, "language": "zh-hans"})
    assert chinese.status_code == 422
    assert chinese.json()["text"] == "❌ consolidate 失败: from_type 与 to_type 必须不同"
    english = api("post", "/tools/memory", body)
    assert english.json()["text"] == "❌ consolidate failed: from_type and to_type must differ"


def test_a_refused_retry_names_the_status_in_chinese(logged_in, user):
    document = Document.objects.create(
        user=user, title="Tide tables", sha256="t1", status=DocumentStatus.READY
    )
    page = logged_in.post(reverse("document_retry", args=[document.pk]), follow=True, **ZH).text
    assert "只有失败、已取消、已暂停或卡住的文档可以重试（此文档处于“就绪”状态）" in page
    english = logged_in.post(reverse("document_retry", args=[document.pk]), follow=True).text
    assert "only failed, cancelled, paused or stalled documents can be retried (this one is ready)" in english


def test_a_limit_is_worded_in_the_active_language():
    with translation.override("zh-hans"), pytest.raises(InputRejected) as chinese:
        check_text("x" * 12, "title", 10)
    assert str(chinese.value) == "title 长 12 个字符；上限为 10"
    with pytest.raises(InputRejected) as english:
        check_text("x" * 12, "title", 10)
    assert str(english.value) == "title is 12 characters long; the limit is 10"


def test_a_privacy_refusal_is_worded_in_chinese_for_a_chinese_call(api, user):
    from core.models import PrivacySettings

    PrivacySettings.objects.create(user=user, secrets="keep", personal="refuse")
    chinese = api("post", "/tools/memory", {"action": "add", "content": "我的身份证号是11010519491231002X"})
    assert chinese.json()["text"] == (
        "❌ add 失败: 这条记忆未保存：其中含有身份证号，你的隐私设置拒绝保存此类内容"
    )
    english = api("post", "/tools/memory", {"action": "add", "content": "my ID is 11010519491231002X"})
    assert english.json()["text"] == (
        "❌ add failed: the memory was not stored: it contains a Chinese resident ID number (身份证号), which "
        "your privacy settings refuse to store"
    )


def test_a_malformed_tool_parameter_is_named_in_chinese_for_a_chinese_call(db):
    from memories.tools import MemoryTool

    tool = MemoryTool(user_id="user123")
    reply = tool.run({"action": "add", "content": "周末去爬山", "importance": "高"})
    assert reply == "❌ add 失败: 参数 'importance' 必须是数字，收到 '高'"
    english = tool.run({"action": "add", "content": "hiking at the weekend", "importance": "high"})
    assert english == "❌ add failed: parameter 'importance' must be a number, got 'high'"
