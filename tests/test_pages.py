import re

import pytest
from django.urls import reverse

from memories.actions.write import memory_create

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
        ("Settings", "settings"),
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


# --- layout on narrow screens, error pages, favicon ---------------------------------------------------------------


def test_layout_has_a_menu_button_for_the_navigation_and_links_the_favicon(logged_in):
    response = logged_in.get(reverse("dashboard"))
    nonce = re.search(r"'nonce-([^']+)'", response["Content-Security-Policy"]).group(1)
    html = response.text
    assert (
        '<button type="button" class="nav-toggle" aria-controls="main-nav" aria-expanded="false" hidden>'
        "Menu</button>" in html
    )
    assert '<nav id="main-nav" aria-label="Main">' in html
    assert re.search(rf'<script src="/static/js/nav[^"]*\.js" nonce="{re.escape(nonce)}" defer>', html)
    assert re.search(r'<link rel="icon" href="/static/favicon[^"]*\.svg" type="image/svg\+xml">', html)
    assert " style=" not in html and "<style" not in html and "onclick" not in html


def test_favicon_ico_is_the_svg_icon_for_anyone(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml"
    assert response.content.startswith(b"<svg xmlns=")
    assert response["Cache-Control"] == "public, max-age=86400"
    assert client.post("/favicon.ico").status_code == 405


def test_404_is_a_styled_page_with_the_navigation(logged_in):
    response = logged_in.get("/no-such-page/<b>x</b>")
    assert response.status_code == 404
    html = response.text
    assert '<nav id="main-nav" aria-label="Main">' in html and f'href="{reverse("memory_list")}"' in html
    assert re.search(r'<link rel="stylesheet" href="/static/css/app[^"]*\.css">', html)
    assert '<h1 id="error-heading">Page not found</h1>' in html
    assert "<code>/no-such-page/&lt;b&gt;x&lt;/b&gt;</code>" in html
    assert ">Log out</button>" in html


def test_404_for_a_visitor_has_the_navigation_but_no_account(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert '<nav id="main-nav" aria-label="Main">' in response.text
    assert "Log out" not in response.text


def test_api_404_stays_json(client):
    response = client.get("/api/v1/no-such-endpoint/")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found: no API route matches this path."}


@pytest.mark.urls("tests.urls_failing")
def test_500_is_a_styled_page_with_the_navigation_from_no_database(logged_in, django_assert_num_queries):
    from django.test import RequestFactory

    from core.views import server_error

    logged_in.raise_request_exception = False
    response = logged_in.get("/explode/")
    assert response.status_code == 500
    html = response.content.decode()
    assert '<h1 id="error-heading">Something went wrong</h1>' in html
    assert '<nav id="main-nav" aria-label="Main">' in html and f'href="{reverse("library")}"' in html
    assert re.search(r'<link rel="stylesheet" href="/static/css/app[^"]*\.css">', html)
    assert "a bug in a view" not in html and "Traceback" not in html
    # Rendered without the request's context: no session, no user, not one query.
    with django_assert_num_queries(0):
        again = server_error(RequestFactory().get("/explode/"))
    assert again.status_code == 500 and b"Something went wrong" in again.content
