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
SOURCES = ("agents", "config", "console", "core", "knowledge", "memories", "templates", "static")


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
    return {key for key in _compiled(filled, tmp_path / f"{domain}-fresh.mo") if key != ""}


@pytest.mark.parametrize("domain", ["django"])
def test_every_marked_string_has_a_chinese_translation(domain, tmp_path, monkeypatch):
    marked = _marked_strings(tmp_path, monkeypatch, domain)
    assert len(marked) > 50  # the pages, messages and tool replies are marked
    translated = _compiled(CATALOGUE / f"{domain}.po", tmp_path / "committed.mo")
    missing = sorted(str(key) for key in marked if not translated.get(key))
    assert missing == [], f"{len(missing)} strings lack a zh-hans translation: {missing[:20]}"


@pytest.mark.parametrize("domain", ["django"])
def test_the_committed_mo_is_compiled_from_the_committed_po(domain, tmp_path):
    from_po = _compiled(CATALOGUE / f"{domain}.po", tmp_path / "fresh.mo")
    with (CATALOGUE / f"{domain}.mo").open("rb") as mo:
        committed = dict(gettext.GNUTranslations(mo)._catalog)  # type: ignore[attr-defined]
    assert committed == from_po


def test_the_catalogue_has_no_fuzzy_or_obsolete_entries():
    text = (CATALOGUE / "django.po").read_text()
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


def test_a_404_page_in_chinese(logged_in):
    page = logged_in.get("/no/such/page/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "页面不存在" in page
