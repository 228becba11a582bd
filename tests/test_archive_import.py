"""Import is as safe as the API: every row passes the API's rules, the archive is read within limits, a refusal
names the row and leaves no row and no file, and an account with data is merged into by stable keys
(issue 33, item 4)."""

import json
import os
import sqlite3
import subprocess
import sys
import zipfile
from contextlib import closing
from pathlib import Path

import pytest
from django.conf import global_settings, settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import check_password
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from console import archive as archive_module
from console.portability import PortabilityError, import_archive
from conversations.models import AgentSession
from core.services import api_key_create
from knowledge import services as knowledge
from knowledge.models import Chunk, Document
from memories.models import Entity, Memory
from tests.served import ROOT

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"7" * 64


def media_files() -> set[str]:
    root = Path(settings.MEDIA_ROOT)
    return {path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()}


@pytest.fixture
def exported(api, client, user, write_key, tmp_path, django_capture_on_commit_callbacks):
    """(manifest, rows, files) of alice's archive: a tool session named "api", memories (one perceptual, with
    its file), a document with its chunks; alice is then deleted, as on another instance."""
    with django_capture_on_commit_callbacks(execute=True):
        api(
            "post",
            "/tools/memory",
            {"action": "add", "content": "李四是前端工程师", "memory_type": "semantic"},
        )
        upload = SimpleUploadedFile("board.png", PNG, content_type="image/png")
        client.post(
            "/api/v1/memories/perceptual", {"file": upload, "content": "白板草图"}, HTTP_X_API_KEY=write_key
        )
        api("post", "/memories/", {"content": "Ana likes green tea", "memory_type": "semantic"})
        knowledge.document_create_from_text(
            user=user, text="# Guide\n\nThe kettle lives in the cupboard.", title="guide", background=False
        )
    path = tmp_path / "alice.zip"
    call_command("export_user", "alice", str(path))
    with zipfile.ZipFile(path) as opened:
        manifest = json.loads(opened.read("manifest.json"))
        rows = [json.loads(line) for line in opened.read("data.jsonl").decode().split("\n") if line]
        files = {name: opened.read(name) for name in opened.namelist() if name.startswith("files/")}
    user.delete()
    return manifest, rows, files


def write_archive(
    path: Path, manifest: dict, rows: list[dict], files: dict[str, bytes], data: bytes | None = None
):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
        archive.writestr(
            "data.jsonl", data if data is not None else "".join(json.dumps(r) + "\n" for r in rows)
        )
        for name, content in files.items():
            archive.writestr(name, content)
    return path


def memory_rows(rows: list[dict]) -> list[dict]:
    return [row for row in rows if row["model"] == "memories.memory"]


def last_memory(rows: list[dict]) -> dict:
    """The last memory row: written after the perceptual memory's file, so a refusal there must remove a file."""
    return memory_rows(rows)[-1]


def _missing_file(manifest, rows, files):
    return manifest, rows, {}, "names files/"


def _bad_json_line(manifest, rows, files):
    lines = [json.dumps(row) for row in rows]
    lines[-1] = '{"model": "memories.memory", "pk": '
    return manifest, rows, files, "is not JSON", "\n".join(lines) + "\n"


def _no_username(manifest, rows, files):
    return {k: v for k, v in manifest.items() if k != "username"}, rows, files, "names no username"


def _row_without_user(manifest, rows, files):
    del last_memory(rows)["fields"]["user"]
    return manifest, rows, files, "names no user"


def _bad_date(manifest, rows, files):
    last_memory(rows)["fields"]["created_at"] = "2024-13-45T10:00:00Z"
    return manifest, rows, files, "created_at"


def _huge_importance(manifest, rows, files):
    last_memory(rows)["fields"]["importance"] = 1e308
    return manifest, rows, files, "importance must be a number between 0 and 1"


MALFORMED = [_missing_file, _bad_json_line, _no_username, _row_without_user, _bad_date, _huge_importance]


@pytest.mark.parametrize("malform", MALFORMED, ids=[m.__name__.strip("_") for m in MALFORMED])
def test_a_malformed_archive_is_422_naming_the_row_and_leaves_nothing(
    exported, client, other_user, tmp_path, malform
):
    manifest, rows, files, expected, *data = malform(*exported)
    path = write_archive(tmp_path / "bad.zip", manifest, rows, files, *(d.encode() for d in data))
    key = api_key_create(user=other_user, name="import", scope="write")[1]
    before = media_files()

    response = client.post(
        "/api/v1/data/import", {"file": SimpleUploadedFile("bad.zip", path.read_bytes())}, HTTP_X_API_KEY=key
    )

    assert response.status_code == 422, response.content
    detail = response.json()["detail"]
    assert expected in detail and (malform is _no_username or "row " in detail), detail
    assert "/tmp" not in detail  # no server path in the answer
    assert not Memory.objects.exists() and not AgentSession.objects.exists() and not Document.objects.exists()
    assert media_files() == before


def test_a_refusal_after_a_file_was_written_removes_the_file(exported, other_user, tmp_path):
    manifest, rows, files = exported
    # An entity (written after every memory, the perceptual one and its file among them) whose id is taken here.
    entity = next(row for row in rows if row["model"] == "memories.entity")
    Entity.objects.create(pk=entity["pk"], user=other_user, name="Theirs", key="theirs")
    before = media_files()
    with pytest.raises(
        PortabilityError, match=r"row \d+: this instance already holds entities from this archive"
    ):
        import_archive(write_archive(tmp_path / "a.zip", manifest, rows, files), as_username="carol")
    assert media_files() == before
    assert not get_user_model().objects.filter(username="carol").exists() and not Memory.objects.exists()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda f: f.update(content="x" * 2_000_000 + "\x00"), "2,000,001 characters"),
        (lambda f: f.update(content="tea \x00 time"), "U+0000"),
        (lambda f: f.update(metadata={f"k{i}": "y" * 1000 for i in range(500)}), "the limit is 16,384"),
        (lambda f: f.update(tags=["t" * 1000] * 5000), "tags is 5,020,000 bytes"),
        (lambda f: f.update(tags=["t" * 1000]), "the limit is 200"),
        (lambda f: f.update(tags=["t"] * 101), "tags has 101 items; the limit is 100"),
        (lambda f: f.update(participants={"not": "a list"}), "participants must be a list"),
        (lambda f: f.update(memory_type="dream"), "memory_type"),
        (lambda f: f.update(expires_at="0001-01-01T00:00:00Z"), "between the years 2 and 9998"),
        (lambda f: f.update(access_count=-1), "access_count"),
        (lambda f: f.update(session="00000000-0000-0000-0000-000000000000"), "does not hold"),
        (lambda f: f.update(user=["mallory"]), "another user"),
        (lambda f: f.update(surprise=1), "has a field 'surprise'"),
    ],
    ids=[
        "2M characters with NUL",
        "NUL",
        "500 KB metadata",
        "5000 tags",
        "a long tag",
        "101 tags",
        "participants not a list",
        "unknown type",
        "year 1",
        "negative count",
        "foreign session",
        "another user",
        "unknown field",
    ],
)
def test_every_memory_row_passes_the_apis_rules(exported, tmp_path, change, expected):
    manifest, rows, files = exported
    change(last_memory(rows)["fields"])
    with pytest.raises(PortabilityError, match=r"row \d+") as refused:
        import_archive(write_archive(tmp_path / "a.zip", manifest, rows, files), as_username="carol")
    assert expected in str(refused.value)
    assert not Memory.objects.exists()


def test_a_data_file_of_blank_lines_is_refused_at_once(exported, tmp_path, monkeypatch):
    manifest, rows, files = exported
    data = b"".join(json.dumps(row).encode() + b"\n" for row in rows[:2]) + b"\n" * 120_000_000
    path = write_archive(tmp_path / "blank.zip", manifest, rows, files, data)
    assert path.stat().st_size < 1_000_000  # 120 MB of newlines packs to a few hundred KB
    lines_read = []  # "at once": counted in lines of the data file read, not in seconds
    readline = zipfile.ZipExtFile.readline
    monkeypatch.setattr(
        zipfile.ZipExtFile,
        "readline",
        lambda member, *a: lines_read.append(member.name) or readline(member, *a),
    )
    with pytest.raises(PortabilityError, match="row 3 is empty"):
        import_archive(path, as_username="carol")
    assert lines_read.count(archive_module.DATA) == 3


def test_a_row_over_the_size_limit_is_refused_before_it_is_read_whole(exported, tmp_path, monkeypatch):
    manifest, rows, files = exported
    monkeypatch.setattr(archive_module, "MAX_ROW_BYTES", 4096)
    last_memory(rows)["fields"]["context"] = "长" * 2000  # 6 KB of UTF-8
    with pytest.raises(PortabilityError, match=r"row \d+ is over"):
        import_archive(write_archive(tmp_path / "a.zip", manifest, rows, files), as_username="carol")


def test_a_file_over_the_upload_limit_is_refused(exported, tmp_path, settings):
    manifest, rows, files = exported
    settings.MNEMO_MAX_UPLOAD_MB = 1
    name = next(iter(files))
    files[name] = b"\x00" * (1024 * 1024 + 1)
    with pytest.raises(PortabilityError, match="its file is over MNEMO_MAX_UPLOAD_MB=1 MB"):
        import_archive(write_archive(tmp_path / "a.zip", manifest, rows, files), as_username="carol")


def test_importing_into_an_account_with_data_merges_by_stable_keys(
    exported, api, other_user, tmp_path, django_capture_on_commit_callbacks
):
    manifest, rows, files = exported
    key = api_key_create(user=other_user, name="bob", scope="write")[1]
    with django_capture_on_commit_callbacks(execute=True):
        # Mallory's own session named "api" (every tool call makes one) and the same document, already here.
        api("post", "/tools/memory", {"action": "add", "content": "Mallory drinks coffee"}, key=key)
        knowledge.document_create_from_text(
            user=other_user,
            text="# Guide\n\nThe kettle lives in the cupboard.",
            title="guide",
            background=False,
        )
    chunks_before = list(Chunk.objects.filter(user=other_user).values_list("pk", flat=True))

    imported = import_archive(write_archive(tmp_path / "a.zip", manifest, rows, files), as_username="mallory")

    archived_chunks = sum(row["model"] == "knowledge.chunk" for row in rows)
    assert imported.merged == {
        "conversations.agentsession": 1,
        "knowledge.document": 1,
        "knowledge.chunk": archived_chunks,
    }
    assert imported.counts["memories.memory"] == 3
    assert list(AgentSession.objects.filter(user=other_user).values_list("key", flat=True)) == ["api"]
    assert Document.objects.filter(user=other_user).count() == 1
    assert list(Chunk.objects.filter(user=other_user).values_list("pk", flat=True)) == chunks_before
    session = AgentSession.objects.get(user=other_user)
    assert set(session.memories.values_list("content", flat=True)) == {
        "Mallory drinks coffee",
        "李四是前端工程师",
    }
    # The same archive again: its memories are here already, which is refused with the reason.
    with pytest.raises(PortabilityError, match="already holds memories from this archive"):
        import_archive(write_archive(tmp_path / "b.zip", manifest, rows, files), as_username="mallory")
    assert Memory.objects.filter(user=other_user).count() == 4


def test_export_writes_its_archive_for_its_owner_only(user, tmp_path):
    path = tmp_path / "alice.zip"
    path.write_bytes(b"old")
    path.chmod(0o644)
    call_command("export_user", "alice", str(path))
    assert path.stat().st_mode & 0o777 == 0o600
    call_command("export_user", "alice", str(tmp_path / "new.zip"))
    assert (tmp_path / "new.zip").stat().st_mode & 0o777 == 0o600


def manage(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "QDRANT_", "NEO4J_", "LLM_"))
    }
    environ.update(MNEMO_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="config.settings", **env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_import_user_sets_up_a_fresh_folder_and_the_password(exported, tmp_path, settings):
    manifest, rows, files = exported
    path = write_archive(tmp_path / "alice.zip", manifest, rows, files)
    fresh = tmp_path / "fresh"

    done = manage(
        fresh,
        "import_user",
        str(path),
        "--password-from-env",
        "ALICE_PASSWORD",
        ALICE_PASSWORD="tea-at-noon-42",
    )

    assert done.returncode == 0, done.stderr
    assert "Applying migrations to" in done.stdout and "Imported" in done.stdout
    assert "alice signs in with the password from ALICE_PASSWORD." in done.stdout
    # Read from the new folder's database here rather than by another manage.py (3-6 s of CPU each); the
    # command hashed it with the product's hashers, which the test settings replace with a fast one.
    settings.PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS
    with closing(sqlite3.connect(fresh / "mnemo.sqlite3")) as database:
        (stored,) = database.execute("SELECT password FROM auth_user WHERE username = 'alice'").fetchone()
    assert check_password("tea-at-noon-42", stored) and not check_password("tea-at-noon-43", stored)

    again = manage(tmp_path / "other", "import_user", str(path))
    assert again.returncode == 0, again.stderr
    assert "alice has no password yet: set one with `manage.py changepassword alice`" in again.stdout
    refused = manage(tmp_path / "third", "import_user", str(path), "--password-from-env", "UNSET_VARIABLE_X")
    assert refused.returncode != 0 and "UNSET_VARIABLE_X" in refused.stderr
