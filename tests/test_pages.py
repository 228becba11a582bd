import re

import pytest
from django.urls import reverse

from memories.services import memory_create

pytestmark = pytest.mark.django_db


def test_layout_loads_htmx_from_django_htmx_with_the_csp_nonce(logged_in):
    response = logged_in.get(reverse("dashboard"))
    csp = response["Content-Security-Policy"]
    nonce = re.search(r"'nonce-([^']+)'", csp).group(1)
    assert "script-src 'self' 'nonce-" in csp
    assert "unsafe-inline" not in csp
    assert re.search(
        rf'<script src="/static/django_htmx/htmx-2[^"]*\.js" defer nonce="{re.escape(nonce)}"', response.text
    )
    # Every script tag carries the nonce: no inline script could run without it.
    for tag in re.findall(r"<script[^>]*>", response.text):
        assert f'nonce="{nonce}"' in tag


def test_layout_navigation_reaches_every_section(logged_in):
    html = logged_in.get(reverse("dashboard")).text
    for label, name in [
        ("Dashboard", "dashboard"),
        ("Memories", "memory_list"),
        ("Sessions", "session_list"),
        ("Graph", "graph"),
        ("Knowledge", "library"),
        ("Chat", "chat"),
        ("API keys", "api_keys"),
        ("Health", "health"),
    ]:
        assert f'href="{reverse(name)}"' in html
        assert f">{label}</a>" in html


def test_chinese_text_renders_as_utf8(logged_in, user):
    memory_create(
        user=user, content="李四是前端工程师，擅长React和Vue.js开发", memory_type="semantic", importance=0.7
    )
    response = logged_in.get(reverse("dashboard"))
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert "李四是前端工程师" in response.text
    assert '<meta charset="utf-8">' in response.text


def test_dashboard_counts_only_my_memories(logged_in, user, other_user):
    memory_create(user=user, content="mine", memory_type="semantic")
    memory_create(user=other_user, content="not yours", memory_type="semantic")
    response = logged_in.get(reverse("dashboard"))
    assert response.context["memory_count"] == 1
    assert "not yours" not in response.text


def test_memory_list_htmx_request_returns_only_the_table(logged_in, user):
    memory_create(user=user, content="an episodic memory", memory_type="episodic")
    memory_create(user=user, content="a semantic memory", memory_type="semantic")
    response = logged_in.get(
        reverse("memory_list") + "?type=episodic", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="memory-table"
    )
    assert response.status_code == 200
    assert "<html" not in response.text
    assert "an episodic memory" in response.text
    assert "a semantic memory" not in response.text


def test_memory_list_shows_only_my_memories(logged_in, other_user):
    memory_create(user=other_user, content="mallory's secret", memory_type="semantic")
    assert "mallory" not in logged_in.get(reverse("memory_list")).text


def test_security_headers(logged_in):
    response = logged_in.get(reverse("dashboard"))
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
