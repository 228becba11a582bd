"""Chinese and English throughout (issue 35 item 4): the zh-hans catalogue is complete and compiled, pages follow
Accept-Language and the language switch, and flash messages come out in the chosen language."""

import gettext
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES"
# The folders whose code and templates carry user-facing strings (the tests and benchmarks carry none).
SOURCES = (
    "agents",
    "config",
    "console",
    "conversations",
    "core",
    "knowledge",
    "memories",
    "templates",
    "static",
)


def _compiled(po: Path, out: Path) -> dict:
    """The catalogue GNU gettext compiles from `po`: fuzzy and empty translations are left out, as at run time."""
    subprocess.run(["msgfmt", "--check-format", "-o", str(out), str(po)], check=True, capture_output=True)
    with out.open("rb") as mo:
        return dict(gettext.GNUTranslations(mo)._catalog)  # type: ignore[attr-defined]


def _marked_strings(tmp_path: Path, monkeypatch, domain: str) -> set:
    """Every msgid Django's makemessages finds in the sources today, taken from a copy so nothing in the
    checkout changes."""
    copy = tmp_path / "src"
    for name in SOURCES:
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__", "vendor"))
    (copy / "locale").mkdir()
    monkeypatch.chdir(copy)
    with override_settings(LOCALE_PATHS=[]):
        call_command("makemessages", locale=["zh_Hans"], domain=domain, verbosity=0)
    fresh = copy / "locale" / "zh_Hans" / "LC_MESSAGES" / f"{domain}.po"
    # msgen copies each msgid into its msgstr, so the compiled catalogue lists every msgid, plurals included.
    filled = tmp_path / f"{domain}-filled.po"
    subprocess.run(["msgen", "-o", str(filled), str(fresh)], check=True, capture_output=True)
    return {_msgid(key) for key in _compiled(filled, tmp_path / f"{domain}-fresh.mo") if key != ""}


def _msgid(key) -> str:
    """A plural entry is keyed (msgid, form) and Chinese has one form only: the msgid names the entry."""
    return key[0] if isinstance(key, tuple) else key


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_every_marked_string_has_a_chinese_translation(domain, tmp_path, monkeypatch):
    marked = _marked_strings(tmp_path, monkeypatch, domain)
    assert len(marked) > {"django": 600, "djangojs": 30}[domain]  # pages, messages, tool replies, scripts
    translated = {
        _msgid(key) for key, text in _compiled(CATALOGUE / f"{domain}.po", tmp_path / "mo").items() if text
    }
    missing = sorted(key for key in marked if key not in translated)
    assert missing == [], f"{len(missing)} strings lack a zh-hans translation: {missing[:20]}"


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_the_committed_mo_is_compiled_from_the_committed_po(domain, tmp_path):
    from_po = _compiled(CATALOGUE / f"{domain}.po", tmp_path / "fresh.mo")
    with (CATALOGUE / f"{domain}.mo").open("rb") as mo:
        committed = dict(gettext.GNUTranslations(mo)._catalog)  # type: ignore[attr-defined]
    assert committed == from_po


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_the_catalogue_has_no_fuzzy_or_obsolete_entries(domain):
    text = (CATALOGUE / f"{domain}.po").read_text()
    assert "#, fuzzy" not in text.split("\n\n", 1)[1]  # the header may carry it; no entry may
    assert "\n#~ " not in text


def test_settings_offer_english_and_simplified_chinese():
    assert settings.LANGUAGE_CODE == "en"
    assert [code for code, _ in settings.LANGUAGES] == ["en", "zh-hans"]
    middleware = settings.MIDDLEWARE
    locale = middleware.index("django.middleware.locale.LocaleMiddleware")
    assert middleware.index("django.contrib.sessions.middleware.SessionMiddleware") < locale
    assert locale < middleware.index("django.middleware.common.CommonMiddleware")


# --- pages -------------------------------------------------------------------------------------------------


def test_a_page_is_english_by_default(logged_in):
    page = logged_in.get("/").content.decode()
    assert '<html lang="en">' in page
    assert "<h1>Dashboard</h1>" in page
    assert ">Memories</a>" in page


def test_accept_language_chinese_gives_the_chinese_page(logged_in):
    page = logged_in.get("/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9,en;q=0.5").content.decode()
    assert '<html lang="zh-hans">' in page
    assert "<h1>仪表盘</h1>" in page
    assert ">记忆</a>" in page
    assert "Dashboard</h1>" not in page


def test_the_scripts_words_come_from_the_javascript_catalogue(client):
    english = client.get("/i18n/js/").content.decode()
    assert "Mnemo is answering" not in english  # English needs no catalogue: the scripts carry it
    chinese = client.get("/i18n/js/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "Mnemo \\u6b63\\u5728\\u56de\\u7b54" in chinese or "Mnemo 正在回答" in chinese


def test_the_login_page_follows_accept_language(client):
    page = client.get("/login/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "用户名" in page and "密码" in page
    assert 'name="language"' in page  # the switch is there before signing in too


def test_the_language_switch_sets_the_cookie_and_the_next_page_follows_it(logged_in):
    page = logged_in.get("/memories/").content.decode()
    assert 'action="/i18n/setlang/"' in page and 'name="next" value="/memories/"' in page
    switched = logged_in.post("/i18n/setlang/", {"language": "zh-hans", "next": "/memories/"})
    assert switched.status_code == 302
    assert switched["Location"] == "/memories/"
    assert switched.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    # The cookie outranks the browser's Accept-Language.
    page = logged_in.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "<h1>仪表盘</h1>" in page
    back = logged_in.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert back.cookies[settings.LANGUAGE_COOKIE_NAME].value == "en"
    assert "<h1>Dashboard</h1>" in logged_in.get("/").content.decode()


def test_the_language_switch_refuses_a_foreign_next(logged_in):
    switched = logged_in.post("/i18n/setlang/", {"language": "zh-hans", "next": "https://evil.example/"})
    assert switched.status_code == 302
    assert switched["Location"] == "/"


def test_the_language_switch_is_csrf_protected(client, user):
    client.handler.enforce_csrf_checks = True
    client.force_login(user)
    refused = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    assert refused.status_code == 403
    assert settings.LANGUAGE_COOKIE_NAME not in refused.cookies


def test_a_flash_message_comes_in_the_chosen_language(logged_in, user):
    from memories.actions.write import memory_create

    logged_in.post("/i18n/setlang/", {"language": "zh-hans", "next": "/memories/"})
    memory = memory_create(user=user, content="A note to delete", memory_type="semantic")
    page = logged_in.post(f"/memories/{memory.pk}/delete/", follow=True).content.decode()
    assert "记忆已删除。" in page
    assert "Memory deleted." not in page


def test_a_flash_message_is_english_by_default(logged_in, user):
    from memories.actions.write import memory_create

    memory = memory_create(user=user, content="A note to delete", memory_type="semantic")
    assert "Memory deleted." in logged_in.post(f"/memories/{memory.pk}/delete/", follow=True).content.decode()


def test_a_form_error_in_chinese(logged_in):
    page = logged_in.get("/memories/?min_importance=0.9&max_importance=0.1", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert "重要性上限低于下限。" in page.content.decode()


def test_the_dashboards_profile_headings_follow_the_page_language(logged_in, user):
    from memories.actions.write import memory_create

    memory_create(user=user, content="The user works at Acme as an engineer.", memory_type="semantic")
    assert "<h3>Work</h3>" in logged_in.get("/").content.decode()
    assert "<h3>工作</h3>" in logged_in.get("/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()


def test_a_404_page_in_chinese(logged_in):
    page = logged_in.get("/no/such/page/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "页面不存在" in page


# --- the tool endpoints and the OpenAI-compatible endpoint answer in the language of the request --------------


@pytest.mark.django_db(transaction=True)
def test_the_memory_tool_endpoint_answers_in_the_language_of_the_content(api):
    chinese = api("post", "/tools/memory", {"action": "add", "content": "赵六喜欢在周末爬山"}).json()
    assert chinese["text"] == f"✅ 记忆已添加 (ID: {chinese['data']['id']})"
    english = api("post", "/tools/memory", {"action": "add", "content": "Zhao Liu hikes on weekends"}).json()
    assert english["text"] == f"✅ Memory added (ID: {english['data']['id']})"
    # Only the text changes: the data's field names and values are the same in both languages.
    assert set(chinese["data"]) == set(english["data"])
    assert (chinese["data"]["action"], english["data"]["action"]) == ("add", "add")

    found = api("post", "/tools/memory", {"action": "search", "query": "爬山"}).json()
    assert found["text"].startswith("🔍 找到 1 条相关记忆:\n1. [工作记忆] 赵六喜欢在周末爬山 (重要性: 0.50")
    none = api("post", "/tools/memory", {"action": "search", "query": "submarine"}).json()
    assert none["text"] == "🔍 No memories found for 'submarine'"


def test_an_explicit_language_outranks_the_script_of_the_text(api):
    english = api(
        "post", "/tools/memory", {"action": "add", "content": "赵六会弹钢琴", "language": "en"}
    ).json()
    assert english["text"].startswith("✅ Memory added (ID: ")
    summary = api("post", "/tools/memory", {"action": "summary", "language": "zh-hans"}).json()
    assert summary["text"].splitlines()[:2] == ["📊 记忆系统摘要", "总记忆数: 1"]
    assert (
        api("post", "/tools/memory", {"action": "stats"}).json()["text"].startswith("📈 Memory statistics\n")
    )


def test_a_language_mnemo_does_not_speak_is_refused(api):
    refused = api("post", "/tools/memory", {"action": "stats", "language": "fr"})
    assert refused.status_code == 422
    assert "language" in str(refused.json()["detail"])


def test_a_refusal_is_worded_in_the_language_of_the_request(api):
    chinese = api("post", "/tools/memory", {"action": "update", "memory_id": "不存在", "content": "新内容"})
    assert chinese.status_code == 404
    assert chinese.json()["text"] == "⚠️ 未找到要更新的记忆: 不存在"
    english = api("post", "/tools/memory", {"action": "remove", "memory_id": "nope"})
    assert english.json()["text"] == "⚠️ No memory to remove: nope"


@pytest.mark.django_db(transaction=True)
def test_the_rag_tool_endpoint_answers_in_the_language_of_the_text(api):
    chinese = api(
        "post",
        "/tools/rag",
        {"action": "add_text", "text": "灯塔项目的备份每六小时运行一次。", "document_id": "灯塔"},
    ).json()
    assert chinese["text"].startswith("✅ 文本已添加到知识库: 灯塔\n📊 分块数量: 1\n")
    english = api("post", "/tools/rag", {"action": "search", "query": "lighthouse orbit schedule"}).json()
    assert english["text"] == "🔍 Nothing found for 'lighthouse orbit schedule'"
    found = api("post", "/tools/rag", {"action": "search", "query": "灯塔项目的备份"}).json()
    assert found["text"].startswith("搜索结果：\n\n1. 文档: **灯塔** (相似度: ")
    assert (
        api("post", "/tools/rag", {"action": "stats"})
        .json()["text"]
        .startswith("📊 **Knowledge base statistics**\n📝 Namespace: default\n")
    )


def _answer(response) -> str:
    assert response.status_code == 200, response.content
    return response.json()["choices"][0]["message"]["content"]


def test_the_openai_endpoints_retrieval_only_answer_follows_the_last_message(chat_completions, user):
    english = _answer(chat_completions({"messages": [{"role": "user", "content": "What about the moon?"}]}))
    assert english == (
        "Retrieval-only answer (no LLM is configured): nothing in your memories or knowledge base matches this yet."
    )
    chinese = _answer(chat_completions({"messages": [{"role": "user", "content": "月亮怎么样？"}]}))
    assert chinese == "仅检索回答（未配置 LLM）： 你的记忆和知识库中还没有与此相关的内容。"


def test_the_openai_endpoint_takes_an_explicit_language(chat_completions, user):
    body = {"messages": [{"role": "user", "content": "What about the moon?"}], "language": "zh-hans"}
    assert _answer(chat_completions(body)).startswith("仅检索回答（未配置 LLM）：")
    refused = chat_completions({**body, "language": "de"})
    assert refused.status_code == 400
    assert "'language' must be one of en, zh-hans" in refused.json()["error"]["message"]


@pytest.mark.django_db(transaction=True)
def test_headings_of_a_retrieval_only_answer_are_translated(chat_completions, api):
    for content in ("周五发布新版本", "周五开会讨论新版本"):
        api("post", "/tools/memory", {"action": "add", "content": content, "memory_type": "semantic"})
    answer = _answer(chat_completions({"messages": [{"role": "user", "content": "新版本什么时候？"}]}))
    assert answer.startswith("仅检索回答（未配置 LLM）： ")
    assert "\n记忆中还有：\n- " in answer
    english = _answer(
        chat_completions(
            {"messages": [{"role": "user", "content": "新版本什么时候？"}], "language": "en"},
        )
    )
    assert "\nAlso in your memories:\n- " in english
