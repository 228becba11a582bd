"""Crafted archives against import: whatever hypothesis changes in a real export (a field's value, a row's model
or id, a missing field, an extra line, the manifest), the import loads it or refuses it with a PortabilityError,
and a refusal leaves no row and no file behind (issue 33, item 4)."""

import json
import zipfile
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from hypothesis import HealthCheck, event, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from console.portability import PortabilityError, import_archive
from conversations.models import AgentSession
from memories.models import Memory

pytestmark = pytest.mark.django_db

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(
        ["2024-05-08T13:56:00Z", "0000-01-01", "9999-12-31T23:59:59Z", "", "\x00", "\u2028", "1e308"]
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture
def source(
    api, client, user, write_key, tmp_path, django_capture_on_commit_callbacks
) -> tuple[dict, list[dict], dict]:
    """A real export (sessions, memories, one with a file, an edit, entities) of a user who is then deleted."""
    with django_capture_on_commit_callbacks(execute=True):
        api(
            "post",
            "/tools/memory",
            {"action": "add", "content": "李四是前端工程师", "memory_type": "semantic"},
        )
        memory = api(
            "post", "/memories/", {"content": "Ana likes green tea", "memory_type": "semantic"}
        ).json()
        api("patch", f"/memories/{memory['id']}", {"importance": 0.9, "tags": ["tea"]})
        png = SimpleUploadedFile("board.png", b"\x89PNG\r\n\x1a\n" + b"7" * 32, content_type="image/png")
        client.post(
            "/api/v1/memories/perceptual", {"file": png, "content": "白板草图"}, HTTP_X_API_KEY=write_key
        )
    path = tmp_path / "alice.zip"
    call_command("export_user", "alice", str(path))
    with zipfile.ZipFile(path) as opened:
        manifest = json.loads(opened.read("manifest.json"))
        rows = [json.loads(line) for line in opened.read("data.jsonl").decode().split("\n") if line]
        files = {name: opened.read(name) for name in opened.namelist() if name.startswith("files/")}
    user.delete()
    return manifest, rows, files


def media_files() -> set[str]:
    root = Path(settings.MEDIA_ROOT)
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


@st.composite
def crafted(draw, source):
    """(manifest, data.jsonl bytes, files, what was changed) from the real export with one to three changes."""
    manifest, rows, files = source
    manifest, rows, files = json.loads(json.dumps(manifest)), json.loads(json.dumps(rows)), dict(files)
    lines: list[bytes] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["value", "drop", "model", "pk", "line", "manifest", "file"]))
        event(kind)
        row = rows[draw(st.integers(0, len(rows) - 1))]
        if kind == "value":
            row["fields"][draw(st.sampled_from(sorted(row["fields"])))] = draw(JSON_VALUES)
        elif kind == "drop" and row["fields"]:
            row["fields"].pop(draw(st.sampled_from(sorted(row["fields"]))))
        elif kind == "model":
            row["model"] = draw(
                st.sampled_from(["memories.memory", "auth.user", "core.apikey", "x", 5, None])
            )
        elif kind == "pk":
            row["pk"] = draw(JSON_VALUES)
        elif kind == "line":
            lines.append(
                draw(
                    st.sampled_from(
                        [b"\n", b"[]\n", b"{}\n", b'{"fields": {}}\n', b"\xff\xfe\n", b"nul\x00\n"]
                    )
                )
            )
        elif kind == "manifest":
            manifest[draw(st.sampled_from(["username", "version", "format", "counts"]))] = draw(JSON_VALUES)
        elif kind == "file" and files:
            files.pop(draw(st.sampled_from(sorted(files))))
    data = b"".join(json.dumps(row).encode() + b"\n" for row in rows) + b"".join(lines)
    return manifest, data, files


@hypothesis_settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_crafted_archive_loads_or_is_refused_leaving_nothing(source, tmp_path, data):
    manifest, body, files = data.draw(crafted(source))
    path = tmp_path / "crafted.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
        archive.writestr("data.jsonl", body)
        for name, content in files.items():
            archive.writestr(name, content)
    before = media_files()
    try:
        imported = import_archive(path, as_username="fuzz")
    except PortabilityError as refused:
        event("refused")
        assert str(refused)
        assert not get_user_model().objects.filter(username="fuzz").exists()
        assert not Memory.objects.exists() and not AgentSession.objects.exists()
        assert media_files() == before
        return
    event("loaded")
    owner = get_user_model().objects.get(username=imported.username)
    assert Memory.objects.filter(user=owner).count() == imported.counts.get("memories.memory", 0)
    owner.delete()  # the next example starts from an empty instance again
