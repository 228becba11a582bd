"""Chinese and English throughout, the remaining parts (issue 35 item 4): texts stored in rows (a document's error
and notice, a memory edit's and a proposal's reason, the chat's "[Not stored: …]" note) keep their English and a
message key, and show in the reader's language; rows written before keys show their text as it is. Also the
conversion and disk refusals, the tools' date messages, the evaluation breakdown, the graph history, the edit,
settings and health pages."""

import pickle

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext_noop

from console import evaluation
from core.disk import MB, disk_space
from core.models import MessageKeyField, StoredTextQuerySet
from core.stored_text import Text, joined, key_of, shown, stored
from knowledge.models import Document, DocumentStatus
from knowledge.pipeline import ConversionError
from knowledge.pipeline.convert import detect_kind
from memories.actions.edit import memory_restore_version, memory_update
from memories.actions.rules import session_for_key
from memories.actions.write import memory_create
from memories.models import (
    ChatMessage,
    EditVia,
    Entity,
    GraphAction,
    GraphEdit,
    MemoryEdit,
    Proposal,
    ProposalAction,
)
from memories.tools import MemoryTool

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}


# --- the mechanism -----------------------------------------------------------------------------------------


def test_a_text_is_english_and_its_key_translates_it_when_shown():
    inner = Text(gettext_noop("it is password-protected"))
    text = Text(
        gettext_noop("%(prefix)s: %(reason)s"),
        prefix=Text(gettext_noop("This PDF is damaged or encrypted")),
        reason=inner,
    )
    assert text == "This PDF is damaged or encrypted: it is password-protected"
    key = key_of(text)
    assert key["msgid"] == "%(prefix)s: %(reason)s"
    with translation.override("zh-hans"):
        assert shown(text, key) == "此 PDF 已损坏或已加密：它受密码保护"
    assert shown(text, key) == "This PDF is damaged or encrypted: it is password-protected"
    # It crosses the conversion child's pipe whole.
    assert key_of(pickle.loads(pickle.dumps(text))) == key  # noqa: S301 - bytes this test made


def test_a_plain_or_stale_text_is_shown_as_it_is():
    key = key_of(Text(gettext_noop("restored by hand")))
    with translation.override("zh-hans"):
        assert shown("restored by hand", key) == "手动恢复"
        assert shown("a reason from an older version", {}) == "a reason from an older version"
        # The text was rewritten without its key: the text wins.
        assert shown("restored by a script", key) == "restored by a script"
        assert shown("", key) == ""
    assert stored("restored by a script", key) == "restored by a script"
    assert key_of(stored("restored by hand", key)) == key


def test_joined_texts_are_each_translated():
    text = joined("; ", [Text(gettext_noop("a PDF")), "notes.txt"])
    assert text == "a PDF; notes.txt"
    with translation.override("zh-hans"):
        assert shown(text, key_of(text)) == "PDF 文件; notes.txt"


# --- 1. stored texts ---------------------------------------------------------------------------------------


def test_a_document_error_written_in_english_shows_in_chinese(
    logged_in, user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        logged_in.post(
            reverse("document_upload"),
            {
                "namespace": "default",
                "chunk_size": "800",
                "chunk_overlap": "100",
                "files": [SimpleUploadedFile("blank.txt", b"  \n \n  ")],
            },
        )
    document = Document.objects.get(user=user)
    assert document.status == DocumentStatus.FAILED
    assert document.error == "No text could be extracted from blank.txt"  # stored in English
    assert document.error_key["msgid"] == "No text could be extracted from %(name)s%(hint)s"
    chinese = logged_in.get(reverse("library"), **ZH).text
    assert '<p class="error small">无法从 blank.txt 中提取文字</p>' in chinese
    detail = logged_in.get(reverse("document_detail", args=[document.pk]), **ZH).text
    assert "<h2>导入失败</h2>" in detail and "无法从 blank.txt 中提取文字" in detail
    english = logged_in.get(reverse("library")).text
    assert '<p class="error small">No text could be extracted from blank.txt</p>' in english


def test_the_api_keeps_the_stored_english_error(client, write_key, user):
    cancelled = Text(gettext_noop("cancelled by the user"))
    document = Document.objects.create(
        user=user,
        title="t",
        sha256="e1",
        status=DocumentStatus.CANCELLED,
        error=cancelled,
    )
    response = client.get(f"/api/v1/documents/{document.pk}", HTTP_X_API_KEY=write_key, **ZH)
    assert response.json()["error"] == "cancelled by the user"


def test_an_update_writes_the_key_of_each_stored_text_beside_it_as_a_save_does(user):
    document = Document.objects.create(user=user, title="t", sha256="e3", status=DocumentStatus.QUEUED)
    stopped = Text(gettext_noop("stopped while %(name)s waited"), name="notes.txt")
    Document.objects.filter(pk=document.pk).update(status=DocumentStatus.CANCELLED, error=stopped)
    document.refresh_from_db()
    assert (document.error, document.error_key["msgid"]) == (
        "stopped while notes.txt waited",
        stopped.key["msgid"],
    )
    Document.objects.filter(pk=document.pk).update(error="An older, plain error")
    document.refresh_from_db()
    assert document.error_key == {}


def test_every_model_with_a_stored_text_writes_its_key_on_update():
    with_keys = [
        model
        for model in apps.get_models()
        if any(isinstance(field, MessageKeyField) for field in model._meta.concrete_fields)
    ]
    assert len(with_keys) >= 4
    for model in with_keys:
        assert isinstance(model._default_manager.all(), StoredTextQuerySet), model


def test_an_old_document_error_without_a_key_shows_as_stored(logged_in, user):
    Document.objects.create(
        user=user, title="t", sha256="e2", status=DocumentStatus.FAILED, error="Some older English error"
    )
    assert (
        '<p class="error small">Some older English error</p>' in logged_in.get(reverse("library"), **ZH).text
    )


def test_a_conversion_refusal_at_upload_is_in_the_page_language(logged_in, user):
    files = [SimpleUploadedFile("notes.docx", b"just some plain text, not a Word file")]
    data = {"namespace": "default", "chunk_size": "800", "chunk_overlap": "100", "files": files}
    chinese = logged_in.post(reverse("document_upload"), data, follow=True, **ZH).text
    assert "notes.docx 的扩展名是 .docx，但实际上是纯文本；请上传原始文件" in chinese
    files = [SimpleUploadedFile("notes.docx", b"just some plain text, not a Word file")]
    data["files"] = files
    english = logged_in.post(reverse("document_upload"), data, follow=True).text
    assert "notes.docx is named .docx but is really plain text; upload the original file" in english
    assert not Document.objects.filter(user=user).exists()


def test_the_conversion_messages_are_english_with_a_key():
    with pytest.raises(ConversionError) as refused:
        detect_kind(b"\x00\x01\x02 binary", "report.pdf")
    message = refused.value.message
    assert message == "This PDF is damaged or encrypted: report.pdf does not start like a PDF file"
    with translation.override("zh-hans"):
        assert shown(message, key_of(message)) == "此 PDF 已损坏或已加密：report.pdf 的开头不像 PDF 文件"


def test_a_memory_edit_reason_written_in_english_shows_in_chinese(logged_in, user):
    memory = memory_create(user=user, content="The pier opens at six", memory_type="semantic")
    memory_update(memory=memory, via=EditVia.PAGE, content="The pier opens at seven")
    edit = MemoryEdit.objects.get(memory=memory)
    memory_restore_version(memory=memory, edit=edit, via=EditVia.PAGE)
    restore = MemoryEdit.objects.filter(memory=memory).order_by("-created_at", "-pk").first()
    assert restore.reason.startswith("restored the version from before the edit of ")
    MemoryEdit.objects.create(memory=memory, via=EditVia.SYSTEM, changes={}, reason="an old plain reason")
    page = logged_in.get(reverse("memory_detail", args=[memory.pk]), **ZH).text
    assert "恢复到 " in page and " 那次编辑之前的版本</td>" in page
    assert "<td>an old plain reason</td>" in page
    english = logged_in.get(reverse("memory_detail", args=[memory.pk])).text
    assert "<td>restored the version from before the edit of " in english


def test_a_proposal_reason_shows_in_chinese(logged_in, user):
    older = memory_create(user=user, content="The ferry leaves at nine", memory_type="semantic")
    newer = memory_create(user=user, content="The ferry leaves at ten", memory_type="semantic")
    reason = Text(gettext_noop("says the same as this memory (similarity %(similarity)s)"), similarity="0.93")
    Proposal.objects.create(user=user, action=ProposalAction.MERGE, memory=older, target=newer, reason=reason)
    page = logged_in.get(reverse("memory_review"), **ZH).text
    assert '<td class="why">与这条记忆说的是同一件事（相似度 0.93）</td>' in page
    assert (
        '<td class="why">says the same as this memory (similarity 0.93)</td>'
        in logged_in.get(reverse("memory_review")).text
    )


def test_a_refused_chat_message_note_shows_in_chinese(logged_in, user):
    from core.models import PrivacySettings

    PrivacySettings.objects.create(user=user, secrets="mask", personal="refuse")
    session = session_for_key(user=user, key="chat-i18n")
    response = logged_in.post(
        reverse("chat_stream", args=[session.pk]), {"text": "my ID is 11010519491231002X"}
    )
    b"".join(response.streaming_content)
    note = ChatMessage.objects.get(session=session, role="user")
    assert note.content == (
        "[Not stored: it contains a Chinese resident ID number (身份证号), which your privacy settings refuse to "
        "store.]"
    )
    old = ChatMessage.objects.create(session=session, role="user", content="[Not stored: an older note.]")
    page = logged_in.get(reverse("chat_session", args=[session.pk]), **ZH).text
    assert '<div class="bubble-text">[未保存：其中含有身份证号，你的隐私设置拒绝保存此类内容。]</div>' in page
    assert f'<div class="bubble-text">{old.content}</div>' in page


# --- 2 and 3. refusals and page words ---------------------------------------------------------------------


def test_a_full_disk_is_explained_in_chinese(logged_in, settings):
    settings.MNEMO_DISK_RESERVE_MB = disk_space().free // MB + 10_000
    data = {"memory_type": "semantic", "content": "A note that finds no room", "importance": "0.5"}
    chinese = logged_in.post(reverse("memory_add"), data, **ZH).text
    assert "磁盘空间不足，无法保存这条记忆：" in chinese
    english = logged_in.post(reverse("memory_add"), data).text
    assert "Not enough disk space to store this memory: " in english


def test_a_bad_date_in_a_tool_call_is_explained_in_chinese(db):
    tool = MemoryTool(user_id="dates")
    chinese = tool.run(
        {"action": "search", "query": "港口", "time_range": ["昨天", None], "language": "zh-hans"}
    )
    assert "参数“time_range[0]”不是 Mnemo 可接受的 ISO 8601 日期或时间" in chinese
    assert "必须是 ISO 8601 日期时间字符串" in chinese
    english = tool.run({"action": "search", "query": "harbour", "time_range": ["yesterday", None]})
    assert "parameter 'time_range[0]' is not an ISO 8601 date or time Mnemo takes" in english


def test_the_evaluation_breakdown_is_in_chinese(logged_in, user):
    memory = memory_create(user=user, content="The lighthouse keeper is named Ana", memory_type="semantic")
    evaluation.question_create(user=user, text="Who keeps the lighthouse?", expected_memory_ids=[memory.pk])
    run = evaluation.evaluation_run(user=user)
    page = logged_in.get(reverse("evaluation_run", args=[run.pk]), **ZH).text
    assert '<th scope="row">融合搜索（产品实际使用）</th>' in page
    assert "按预期答案的记忆类型" in page and '<th scope="row">语义</th>' in page
    assert "各信号单独检索（各取前 10，不融合）" in page
    assert f"<h1>评估运行 #{run.pk}</h1>" in page
    english = logged_in.get(reverse("evaluation_run", args=[run.pk])).text
    assert (
        '<th scope="row">Fused search (the product)</th>' in english
        and '<th scope="row">semantic</th>' in english
    )


def test_the_graph_history_is_in_chinese(logged_in, user):
    entity = Entity.objects.create(user=user, name="Harbour Co", key="harbour co", entity_type="ORG")
    GraphEdit.objects.create(
        user=user,
        entity_id=entity.pk,
        action=GraphAction.MERGE,
        via="page",
        label="Harbor Co",
        changes={"into": str(entity.pk), "into_name": "Harbour Co"},
    )
    panel = logged_in.get(reverse("graph_entity_memories", args=[entity.pk]), **ZH).text
    assert "合并到 Harbour Co" in panel and "由系统通过页面" in panel
    english = logged_in.get(reverse("graph_entity_memories", args=[entity.pk])).text
    assert "into Harbour Co" in english and "by the system via page" in english


def test_the_edit_settings_and_health_pages_name_their_fields_in_chinese(logged_in, user):
    memory = memory_create(user=user, content="The tide turns at noon", memory_type="semantic")
    edit_page = logged_in.get(reverse("memory_edit", args=[memory.pk]), **ZH).text
    assert "<label>类型 " in edit_page and "<label>重要性 " in edit_page
    keys = logged_in.get(reverse("api_keys"), **ZH).text
    assert "<label>权限范围 " in keys and "<label>名称 " in keys
    health = logged_in.get(reverse("health"), **ZH).text
    assert '<tr data-concern="database"><td>数据库</td>' in health
    assert '<tr data-concern="disk"><td>磁盘</td>' in health
    assert '<tr data-concern="database"><td>database</td>' in logged_in.get(reverse("health")).text
    assert "<label>Type " in logged_in.get(reverse("memory_edit", args=[memory.pk])).text


def test_the_library_and_its_empty_state_are_in_chinese(logged_in):
    chinese = logged_in.get(reverse("library"), **ZH).text
    assert "还没有文档：请在上方上传。" in chinese
    assert "No documents yet: upload some above." in logged_in.get(reverse("library")).text


def test_a_bulk_action_made_in_english_offers_its_undo_in_chinese(logged_in, user):
    memory = memory_create(user=user, content="The quay is closed on Sundays", memory_type="semantic")
    done = logged_in.post(
        reverse("memories_bulk"), {"action": "archive", "ids": [memory.pk]}, HTTP_HX_REQUEST="true"
    )
    assert "Archived 1 memory." in done.text
    listing = logged_in.get(reverse("memory_list"), **ZH).text
    assert "撤销：已归档 1 条记忆</button>" in listing
    undone = logged_in.post(reverse("memories_bulk_undo"), HTTP_HX_REQUEST="true", **ZH).text
    assert "已撤销：已归档 1 条记忆（已恢复 1 条记忆）。" in undone


def test_a_passage_location_is_in_chinese_on_the_page_and_english_in_the_api(
    logged_in, user, client, write_key
):
    from knowledge.models import Chunk

    document = Document.objects.create(
        user=user, title="Annual report", sha256="loc1", status=DocumentStatus.READY, progress=100
    )
    chunk = Chunk.objects.create(
        document=document,
        user=user,
        namespace="default",
        ordinal=0,
        text="Revenue grew",
        page_start=3,
        page_end=4,
    )
    page = logged_in.get(reverse("document_detail", args=[document.pk]), **ZH).text
    assert '<span class="tag location">第 3–4 页</span>' in page
    english = logged_in.get(reverse("document_detail", args=[document.pk])).text
    assert '<span class="tag location">pages 3–4</span>' in english
    assert chunk.location == "pages 3–4"  # what the API and citations give, whatever the language


def test_the_history_names_the_changed_fields_in_the_page_language(logged_in, user):
    memory = memory_create(
        user=user, content="The ferry to the island leaves at nine", memory_type="semantic"
    )
    memory_update(
        memory=memory, via=EditVia.PAGE, content="The ferry to the island leaves at ten", importance=0.9
    )
    chinese = logged_in.get(reverse("memory_detail", args=[memory.pk]), **ZH).text
    assert '<span class="change-field">内容</span>' in chinese
    assert '<span class="change-field">重要性</span>' in chinese
    english = logged_in.get(reverse("memory_detail", args=[memory.pk])).text
    assert '<span class="change-field">Content</span>' in english
    assert '<span class="change-field">Importance</span>' in english


def test_every_field_an_edit_records_has_a_label_in_each_language():
    from memories.actions.edit import EDITABLE_FIELDS
    from memories.templatetags.memory_labels import changed_field_label

    system = ("archived_at", "superseded_by", "supersedes", "merged", "seen_count")
    for language in ("en", "zh-hans"):
        with translation.override(language):
            labels = [changed_field_label(name) for name in (*EDITABLE_FIELDS, *system)]
            assert not set(labels) & {*EDITABLE_FIELDS, *system}
    assert changed_field_label("tags") == "Tags"  # the edit form's own label


def test_the_api_500_answer_is_in_the_request_language():
    import json

    from django.test import RequestFactory

    from core.views import server_error

    with translation.override("zh-hans"):
        chinese = server_error(RequestFactory().get("/api/v1/memories/"))
    english = server_error(RequestFactory().get("/api/v1/memories/"))
    assert chinese.status_code == english.status_code == 500
    assert json.loads(chinese.content) == {"detail": "服务器处理此请求时出错；错误已记录。"}
    assert json.loads(english.content) == {
        "detail": "The server failed on this request; the error is logged."
    }
