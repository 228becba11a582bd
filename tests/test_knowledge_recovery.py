"""Documents a killed or crashed worker left half-ingested are started again (issue 12)."""

import time
from datetime import timedelta

import httpx
import pytest
from django.utils import timezone

from knowledge import services
from knowledge.models import Document, DocumentStatus
from tests.served import ServedInstance

pytestmark = pytest.mark.django_db

TEXT = "\n\n".join(
    f"## Part {n}\n\nMnemo keeps memories for agents; part {n} explains step {n} of the set-up. "
    f"第{n}部分说明安装的第{n}步，以及如何检查结果。"
    for n in range(1, 120)
)


def _left_by_a_dead_worker(user, status=DocumentStatus.EMBEDDING, minutes=20) -> Document:
    accepted = services.document_create_from_text(
        user=user,
        text=f"Mnemo answers from documents ({minutes}). 文档问答。",
        title="guide",
        background=False,
    )
    Document.objects.filter(pk=accepted.document.pk).update(
        status=status, progress=40, updated_at=timezone.now() - timedelta(minutes=minutes)
    )
    return Document.objects.get(pk=accepted.document.pk)


def test_a_stalled_document_is_resumed_and_becomes_ready(user, django_capture_on_commit_callbacks):
    stalled = _left_by_a_dead_worker(user)
    moving = _left_by_a_dead_worker(user, minutes=1)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.documents_resume_stalled() == [str(stalled.pk)]
    assert Document.objects.get(pk=stalled.pk).status == DocumentStatus.READY
    assert Document.objects.get(pk=moving.pk).status == DocumentStatus.EMBEDDING


def test_retry_takes_a_stalled_document_but_not_one_still_moving(
    api, user, django_capture_on_commit_callbacks
):
    stalled = _left_by_a_dead_worker(user, status=DocumentStatus.QUEUED, minutes=30)
    with django_capture_on_commit_callbacks(execute=True):
        response = api("post", f"/documents/{stalled.pk}/retry")
    assert response.status_code in (200, 202), response.content
    assert Document.objects.get(pk=stalled.pk).status == DocumentStatus.READY
    moving = _left_by_a_dead_worker(user, minutes=1)
    response = api("post", f"/documents/{moving.pk}/retry")
    assert response.status_code == 409 and "stalled" in response.json()["detail"]


def test_a_killed_server_resumes_its_half_ingested_document_when_it_starts_again(tmp_path):
    instance = ServedInstance(tmp_path)
    key = instance.set_up("recovery")
    headers = {"X-API-Key": key}
    instance.start()
    try:
        uploaded = httpx.post(
            f"{instance.url}/api/v1/documents",
            headers=headers,
            files={"file": ("guide.md", TEXT.encode(), "text/markdown")},
            timeout=60,
        ).json()
        status_url = f"{instance.url}/api/v1/documents/{uploaded['id']}/status"
        for _ in range(600):  # kill it in the middle of the work
            status = httpx.get(status_url, headers=headers, timeout=30).json()["status"]
            if status in ("chunking", "embedding"):
                break
            time.sleep(0.05)
        assert status in ("chunking", "embedding"), status
        instance.kill()
        instance.start()
        for _ in range(600):
            status = httpx.get(status_url, headers=headers, timeout=30).json()
            if status["status"] in ("ready", "failed"):
                break
            time.sleep(0.5)
        assert status["status"] == "ready", status
    finally:
        instance.stop()
