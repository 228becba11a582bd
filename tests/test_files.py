"""Stored files follow their rows: a deleted perceptual memory or document takes its file once the delete
commits, a bulk delete keeps it for its Undo, and `sweep_files` removes what no row names (issue 33, item 7)."""

import os
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import transaction
from django.urls import reverse

from knowledge import services as knowledge
from knowledge.models import Document
from memories.models import Memory

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def media(name: str) -> Path:
    return Path(settings.MEDIA_ROOT) / name


def perceptual(client, key: str, description: str) -> Memory:
    upload = SimpleUploadedFile("board.png", PNG, content_type="image/png")
    response = client.post(
        "/api/v1/memories/perceptual", {"file": upload, "content": description}, HTTP_X_API_KEY=key
    )
    assert response.status_code == 201, response.content
    return Memory.objects.get(pk=response.json()["id"])


def test_deleting_a_perceptual_memory_deletes_its_file_once_the_delete_commits(
    client, api, write_key, django_capture_on_commit_callbacks
):
    memory = perceptual(client, write_key, "白板上的架构草图")
    stored = media(memory.file.name)
    assert stored.read_bytes() == PNG
    with django_capture_on_commit_callbacks(execute=False) as waiting:
        assert api("delete", f"/memories/{memory.pk}").status_code == 204
    assert stored.exists()  # not before the commit
    for callback in waiting:
        callback()
    assert not stored.exists()


def test_forget_clear_all_and_a_deleted_user_take_their_files(
    client, api, user, write_key, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = perceptual(client, write_key, "first sketch")
        second = perceptual(client, write_key, "second sketch")
        paths = [media(first.file.name), media(second.file.name)]
        reply = api("post", "/tools/memory", {"action": "clear_all", "confirm": True})
    assert reply.status_code == 200 and reply.json()["data"]["deleted"] == 2
    assert [path.exists() for path in paths] == [False, False]

    with django_capture_on_commit_callbacks(execute=True):
        third = perceptual(client, write_key, "third sketch")
        path = media(third.file.name)
        user.delete()
    assert not path.exists()


def test_a_deleted_document_takes_its_file_and_a_rolled_back_delete_keeps_it(
    user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        document = knowledge.document_create_from_text(
            user=user, text="# Notes\n\nThe kettle is in the cupboard.", title="notes", background=False
        ).document
    document_id = document.pk
    stored = media(Document.objects.get(pk=document_id).file.name)
    assert stored.exists()
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError):
        with transaction.atomic():
            knowledge.document_delete(document=Document.objects.get(pk=document_id))
            raise RuntimeError("the request failed after the delete")
    assert stored.exists() and Document.objects.filter(pk=document_id).exists()
    with django_capture_on_commit_callbacks(execute=True):
        knowledge.clear_namespace(user=user, namespace="default")
    assert not stored.exists()


def test_a_bulk_delete_keeps_the_file_for_its_undo_and_the_sweep_takes_it_if_unclaimed(
    client, logged_in, write_key, django_capture_on_commit_callbacks
):
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "memory-table"}
    with django_capture_on_commit_callbacks(execute=True):
        kept = perceptual(client, write_key, "a sketch worth keeping")
        swept = perceptual(client, write_key, "a sketch nobody wants")
    kept_path, swept_path = media(kept.file.name), media(swept.file.name)
    old = time.time() - 3 * 24 * 3600
    for path in (kept_path, swept_path):
        os.utime(path, (old, old))  # uploaded days ago

    with django_capture_on_commit_callbacks(execute=True):
        logged_in.post(reverse("memories_bulk"), {"action": "delete", "ids": [kept.pk]}, **htmx)
    assert kept_path.exists() and kept_path.stat().st_mtime > old  # released now: the grace counts from here
    call_command("sweep_files")
    assert kept_path.exists()  # within the grace period an Undo may still claim it
    with django_capture_on_commit_callbacks(execute=True):
        logged_in.post(reverse("memories_bulk_undo"), **htmx)
    assert Memory.objects.get(pk=kept.pk).file.read() == PNG

    with django_capture_on_commit_callbacks(execute=True):
        logged_in.post(reverse("memories_bulk"), {"action": "delete", "ids": [swept.pk]}, **htmx)
    call_command("sweep_files", "--older-than", "0")
    assert not swept_path.exists() and kept_path.exists()
    with django_capture_on_commit_callbacks(execute=True):
        logged_in.post(reverse("memories_bulk_undo"), **htmx)
    back = Memory.objects.get(pk=swept.pk)  # the row comes back without the file the sweep took
    assert (back.content, back.file.name) == ("a sketch nobody wants", "")


def test_the_sweep_removes_only_orphans_and_its_dry_run_nothing(client, write_key, capsys):
    memory = perceptual(client, write_key, "a sketch in use")
    orphans = [media("perceptual/2020/01/left-behind.png"), media("documents/2020/01/crashed.pdf")]
    for path in orphans:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * 10)
    fresh = media("perceptual/2020/01/uploading-now.png")
    fresh.write_bytes(b"y")
    old = time.time() - 2 * 24 * 3600
    for path in (*orphans, media(memory.file.name)):
        os.utime(path, (old, old))

    call_command("sweep_files", "--dry-run")
    listed = capsys.readouterr().out
    assert "2 orphaned files, 20 bytes: would be deleted (dry run)." in listed
    assert "perceptual/2020/01/left-behind.png" in listed and "documents/2020/01/crashed.pdf" in listed
    assert all(path.exists() for path in orphans)

    call_command("sweep_files")
    assert "2 orphaned files, 20 bytes: deleted." in capsys.readouterr().out
    assert not any(path.exists() for path in orphans) and not media("documents/2020").exists()
    assert fresh.exists() and media(memory.file.name).read_bytes() == PNG
