"""No server file path in an error shown on a page (issue 35 item 5): the stored error keeps it for the logs and
the operator's shell; the page shows "<path>" (core.templatetags.errors)."""

import uuid

import pytest

from core.models import MirrorState
from knowledge.models import Document
from memories.actions.write import memory_create
from memories.models import Memory

pytestmark = pytest.mark.django_db

SERVER_PATH = "/srv/mnemo/var/media/ab/notes.pdf"


def test_a_failed_documents_error_shows_no_server_path(logged_in, user):
    document = Document.objects.create(
        user=user,
        title="notes",
        original_name="notes.pdf",
        sha256=uuid.uuid4().hex * 2,
        status="failed",
        error="unexpected error: FileNotFoundError: [Errno 2] No such file or directory: '/srv/mnemo/var/media/ab/notes.pdf'",
    )
    for path in (f"/knowledge/{document.pk}/", "/knowledge/"):
        html = logged_in.get(path).content.decode()
        assert "No such file or directory: &#x27;&lt;path&gt;&#x27;" in html
        assert "/srv/mnemo" not in html


def test_a_memorys_mirror_error_shows_no_server_path(logged_in, user):
    memory = memory_create(user=user, content="The harbour office opens at nine", memory_type="semantic")
    Memory.objects.filter(pk=memory.pk).update(
        mirror_state=MirrorState.FAILED, mirror_error=f"Storage error: cannot lock {SERVER_PATH}.lock"
    )
    html = logged_in.get(f"/memories/{memory.pk}/").content.decode()
    assert "Storage error: cannot lock &lt;path&gt;" in html
    assert "/srv/mnemo" not in html
