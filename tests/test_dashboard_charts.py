"""The dashboard's charts (their JSON, the page that draws them with Chart.js) and the mirrors' resync button."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from console import dashboard
from core.models import MirrorState
from knowledge.models import Document, DocumentStatus
from memories.models import Entity, Memory, MemoryAccess, Relation

pytestmark = pytest.mark.django_db


def add_memory(user, *, days_ago: int = 0, importance: float = 0.5, **fields) -> Memory:
    [row] = Memory.objects.bulk_create(
        [
            Memory(
                user=user,
                content=f"memory {importance} {days_ago} {fields}",
                memory_type="semantic",
                importance=importance,
                created_at=timezone.now() - timedelta(days=days_ago),
                **fields,
            )
        ]
    )
    return row


def test_the_data_counts_a_users_days_importance_entities_queue_and_mirrors(logged_in, user, other_user):
    first = add_memory(user, days_ago=0, importance=0.95)
    add_memory(user, days_ago=0, importance=1.0)
    add_memory(user, days_ago=2, importance=0.1, mirror_state=MirrorState.FAILED)
    add_memory(user, days_ago=40, importance=0.5)  # older than the 30 days drawn
    add_memory(other_user, days_ago=0, importance=0.95)  # never counted for alice
    MemoryAccess.objects.create(memory=first, user=user, query="张三", via="page")
    MemoryAccess.objects.create(memory=first, user=user, query="李四", via="api")
    Entity.objects.create(user=user, name="张三", key="张三", entity_type="PERSON", frequency=7)
    Entity.objects.create(user=user, name="React", key="react", entity_type="PRODUCT", frequency=3)
    Entity.objects.create(user=other_user, name="Eve", key="eve", frequency=99)
    Document.objects.create(user=user, title="a", sha256="a", status=DocumentStatus.QUEUED)
    Document.objects.create(user=user, title="b", sha256="b", status=DocumentStatus.EMBEDDING)
    Document.objects.create(user=user, title="c", sha256="c", status=DocumentStatus.FAILED)

    response = logged_in.get(reverse("dashboard_data"))
    assert response.status_code == 200
    body = response.json()
    assert len(body["days"]) == dashboard.DAYS == 30
    assert body["days"][-1] == timezone.localdate().isoformat()
    assert (body["added"][-1], body["added"][-3], sum(body["added"])) == (2, 1, 3)
    assert (body["retrieved"][-1], sum(body["retrieved"])) == (2, 2)
    assert body["importance"]["counts"] == [0, 1, 0, 0, 0, 1, 0, 0, 0, 2]
    assert body["importance"]["labels"][0] == "0.0–0.1"
    assert [entity["name"] for entity in body["top_entities"]] == ["张三", "React"]
    assert body["queue"] == {"queued": 2, "ready": 0, "failed": 1}
    mirrors = {row["table"]: (row["pending"], row["failed"]) for row in body["mirrors"]}
    assert mirrors == {"memories": (3, 1), "chunks": (0, 0), "entities": (0, 0), "relations": (0, 0)}


def test_the_data_needs_a_login_and_only_answers_get(client, logged_in):
    assert logged_in.post(reverse("dashboard_data")).status_code == 405
    logged_in.logout()
    response = client.get(reverse("dashboard_data"))
    assert response.status_code == 401
    assert response.json() == {"detail": "Log in to see the dashboard."}


def test_the_page_loads_chart_js_from_node_modules_with_its_nonce_and_no_inline_script(logged_in):
    response = logged_in.get(reverse("dashboard"))
    assert response.status_code == 200
    html = response.text
    assert '<script src="/static/vendor/chartjs/chart.umd.min.js" defer nonce="' in html
    assert '<script src="/static/console/dashboard.js" defer nonce="' in html
    assert f'data-url="{reverse("dashboard_data")}"' in html
    for chart in ("activity", "importance", "entities", "health"):
        assert f'<canvas id="chart-{chart}"' in html
    assert "<script>" not in html and "style=" not in html
    assert "Resync my mirrors" in html


def test_chart_js_is_served_from_node_modules(logged_in):
    response = logged_in.get("/static/vendor/chartjs/chart.umd.min.js")
    assert response.status_code == 200


def test_resync_mirrors_a_users_failed_and_pending_rows_and_no_one_elses(logged_in, user, other_user):
    mine = add_memory(user, mirror_state=MirrorState.FAILED)
    theirs = add_memory(other_user, mirror_state=MirrorState.FAILED)
    zhang = Entity.objects.create(user=user, name="张三", key="张三")
    li = Entity.objects.create(user=user, name="李四", key="李四")
    relation = Relation.objects.create(user=user, source=zhang, target=li)
    Entity.objects.filter(pk=zhang.pk).update(mirror_state=MirrorState.PENDING)
    Relation.objects.filter(pk=relation.pk).update(mirror_state=MirrorState.FAILED, mirror_error="down")

    response = logged_in.post(
        reverse("mirror_resync"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="resync-status"
    )
    assert response.status_code == 200
    assert "Resync queued" in response.text and "<html" not in response.text
    assert response["HX-Trigger"] == '{"mirrors-resynced": {}}'
    # The test settings run tasks eagerly: the resync has happened.
    assert Memory.objects.get(pk=mine.pk).mirror_state == MirrorState.SYNCED
    assert Memory.objects.get(pk=theirs.pk).mirror_state == MirrorState.FAILED
    assert Entity.objects.get(pk=zhang.pk).mirror_state == MirrorState.SYNCED
    assert Relation.objects.get(pk=relation.pk).mirror_state == MirrorState.SYNCED
    mirrors = {
        row["table"]: (row["pending"], row["failed"])
        for row in logged_in.get(reverse("dashboard_data")).json()["mirrors"]
    }
    assert mirrors["memories"] == (0, 0) and mirrors["relations"] == (0, 0)


def test_resync_goes_through_the_dispatcher(logged_in, user, monkeypatch):
    from console import dashboard_views
    from console.tasks import resync_user_mirrors

    sent = []
    monkeypatch.setattr(dashboard_views, "dispatch", lambda task, *args: sent.append((task, args)))
    response = logged_in.post(reverse("mirror_resync"))
    assert (response.status_code, response["Location"]) == (302, reverse("dashboard"))
    assert sent == [(resync_user_mirrors, (user.pk,))]


def test_resync_needs_a_login_and_post(client, logged_in):
    assert logged_in.get(reverse("mirror_resync")).status_code == 405
    logged_in.logout()
    assert client.post(reverse("mirror_resync")).status_code == 302
