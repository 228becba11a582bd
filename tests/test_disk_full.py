"""A full disk: writes are refused (507) before the data folder's disk is full, ingestion that cannot fit pauses
with the reason and resumes once there is room, the health check turns 503, and the server never crashes.

The data lives on a small file system of its own: a tmpfs, or where mounting one is not permitted an ext4 image on
a loop device (the tests run as root, as `make test` does). A filler file stands in for whatever else fills a disk.
"""

import io
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from core import stores
from core.disk import MB, disk_space
from knowledge.models import Document, DocumentStatus
from knowledge.services import documents_resume_paused
from memories.models import Memory
from tests.served import ServedInstance


@contextmanager
def small_file_system(directory: Path, size_mb: int) -> Iterator[str]:
    """A file system of `size_mb` mounted at `directory`; yields its kind. Skips when none can be mounted."""
    directory.mkdir(parents=True, exist_ok=True)
    tmpfs = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0700", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
    )
    kind = "tmpfs"
    if tmpfs.returncode != 0:
        image = directory.parent / f"{directory.name}.img"
        subprocess.run(["truncate", "-s", f"{size_mb}M", str(image)], check=True)
        made = subprocess.run(
            ["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], capture_output=True, text=True
        )
        loop = subprocess.run(
            ["mount", "-o", "loop", str(image), str(directory)], capture_output=True, text=True
        )
        if made.returncode != 0 or loop.returncode != 0:
            pytest.skip(
                "no small file system could be mounted for the data folder: tmpfs said "
                f"{tmpfs.stderr.strip()!r}, a loop-mounted ext4 image said {(made.stderr or loop.stderr).strip()!r}"
            )
        kind = "ext4 on a loop device"
    try:
        yield kind
    finally:
        stores.reset(embeddings=False)  # the vector store's files are on it
        subprocess.run(["umount", "-l", str(directory)], capture_output=True)


def fill(directory: Path, leave_bytes: int) -> Path:
    """A filler file that leaves about `leave_bytes` free on `directory`'s file system."""
    filler = directory / "filler.bin"
    stats = os.statvfs(directory)
    size = max(0, stats.f_bavail * stats.f_frsize - leave_bytes)
    with filler.open("wb") as out:
        block = b"\0" * MB
        while size > 0:
            out.write(block[: min(size, MB)])
            size -= MB
        out.flush()
        os.fsync(out.fileno())
    return filler


@pytest.fixture
def small_disk(settings, tmp_path):
    """The data folder, its uploads and the vector store on a 32 MB file system."""
    mount = tmp_path / "small"
    with small_file_system(mount, 32):
        settings.DATA_DIR = mount
        settings.MEDIA_ROOT = mount / "media"
        settings.QDRANT_EDGE_PATH = mount / "qdrant-edge"
        stores.reset(embeddings=False)
        yield mount


@pytest.mark.django_db
def test_an_upload_or_a_memory_that_would_eat_into_the_reserve_is_refused_with_507(
    small_disk, settings, api, client, write_key
):
    settings.MNEMO_DISK_RESERVE_MB = disk_space().free // MB - 2  # about 2 MB may still be written
    before = disk_space().free
    response = client.post(
        "/api/v1/documents",
        {"file": SimpleUploadedFile("big.txt", b"word " * (700 * 1024))},  # 3.4 MB
        HTTP_X_API_KEY=write_key,
    )
    assert response.status_code == 507
    detail = response.json()["detail"]
    assert detail.startswith("Not enough disk space to store big.txt: 3.4 MB needed, ")
    assert "MB kept in reserve. Free some space" in detail and str(small_disk) not in detail
    assert Document.objects.count() == 0 and not (small_disk / "media").exists()
    assert disk_space().free >= before - MB  # nothing of the file was kept

    items = [{"content": f"An invented fact number {n} about the lighthouse."} for n in range(200)]
    response = api("post", "/memories/bulk", {"items": items})
    assert response.status_code == 507, response.content
    assert response.json()["detail"].startswith("Not enough disk space to store these 200 memories: ")

    settings.MNEMO_DISK_RESERVE_MB = disk_space().free // MB  # under 1 MB left before the reserve
    response = api("post", "/memories/", {"content": "The lighthouse keeper is called Brannagh."})
    assert response.status_code == 507
    assert response.json()["detail"].startswith("Not enough disk space to store this memory: ")
    assert Memory.objects.count() == 0

    settings.MNEMO_DISK_RESERVE_MB = 4
    assert (
        api("post", "/memories/", {"content": "The lighthouse keeper is called Brannagh."}).status_code == 201
    )


@pytest.mark.django_db
def test_health_reports_the_disk_and_answers_503_below_the_reserve(
    small_disk, settings, client, django_user_model
):
    settings.MNEMO_DISK_RESERVE_MB = 8
    client.force_login(django_user_model.objects.create_user("operator", is_staff=True))
    assert client.get("/api/v1/health").status_code == 200
    filler = fill(small_disk, leave_bytes=4 * MB)
    response = client.get("/api/v1/health")
    assert response.status_code == 503
    disk = next(check for check in response.json()["checks"] if check["concern"] == "disk")
    assert disk["ok"] is False
    assert disk["detail"].endswith(
        " MB; 8.0 MB kept in reserve (MNEMO_DISK_RESERVE_MB): uploads and memory writes are refused, "
        "ingestion pauses"
    )
    assert disk["detail"].startswith(("3.", "4.")) and " MB free of 3" in disk["detail"]
    filler.unlink()
    assert client.get("/api/v1/health").status_code == 200


@pytest.mark.django_db
def test_an_ingestion_that_cannot_fit_pauses_with_the_reason_and_resumes_once_there_is_room(
    small_disk, settings, client, write_key, django_capture_on_commit_callbacks
):
    text = "\n\n".join(f"Paragraph {n}: the lighthouse log records wind, tide and ships." for n in range(400))
    # The file fits (26 KB) but its text, chunks and their points (about 200 KB) do not.
    settings.MNEMO_DISK_RESERVE_MB = 0
    settings.MNEMO_DISK_RESERVE_MB = (disk_space().free - 100 * 1024) / MB
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/v1/documents",
            {"file": SimpleUploadedFile("log.txt", text.encode())},
            HTTP_X_API_KEY=write_key,
        )
    assert response.status_code == 201, response.content
    document = Document.objects.get(pk=response.json()["id"])
    assert document.status == DocumentStatus.PAUSED
    assert document.error.startswith("Paused: Not enough disk space to store log.txt: ")
    assert document.error.endswith("It starts again by itself once there is room.")
    assert document.space_needed > 100 * 1024
    assert (document.chunks.count(), document.markdown) == (0, "")
    assert documents_resume_paused() == []  # still no room: it stays paused

    settings.MNEMO_DISK_RESERVE_MB = 1
    with django_capture_on_commit_callbacks(execute=True):
        assert documents_resume_paused() == [str(document.pk)]
    document.refresh_from_db()
    assert (document.status, document.error, document.space_needed) == (DocumentStatus.READY, "", 0)
    assert document.chunks.count() > 0


def noise_png(megabytes: float) -> bytes:
    """A PNG of random pixels: it does not compress, so it takes its size on disk."""
    from PIL import Image

    side = int((megabytes * MB / 3) ** 0.5)
    image = Image.frombytes("RGB", (side, side), os.urandom(side * side * 3))
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=0)
    return out.getvalue()


def disk_health(instance: ServedInstance) -> tuple[int, bool]:
    """The public health check's status and its disk concern's verdict."""
    response = httpx.get(f"{instance.url}/api/v1/health", timeout=30)
    disk = next(check for check in response.json()["checks"] if check["concern"] == "disk")
    return response.status_code, disk["ok"]


def test_a_served_instance_on_a_full_disk_refuses_writes_pauses_ingestion_and_keeps_serving(tmp_path):
    """The issue's scenario: uploads until the disk is nearly full, then something else fills it. Before, the
    upload that filled it got a 500 and the server died of SIGBUS again and again."""
    mount = tmp_path / "data"
    with small_file_system(mount, 128):
        instance = ServedInstance(mount, {"MNEMO_DISK_RESERVE_MB": "24"})
        key = instance.set_up("alice")
        instance.start()
        try:
            http = httpx.Client(base_url=f"{instance.url}/api/v1", headers={"X-API-Key": key}, timeout=120)
            statuses = []
            for n in range(30):
                files = {"file": (f"noise-{n}.png", noise_png(5), "image/png")}
                response = http.post("/documents", files=files)
                statuses.append(response.status_code)
                if response.status_code != 201:
                    break
            assert statuses[0] == 201 and statuses[-1] == 507, statuses
            assert response.json()["detail"].startswith(f"Not enough disk space to store noise-{n}.png: ")
            accepted = [d["id"] for d in http.get("/documents", params={"limit": 100}).json()["items"]]
            assert len(accepted) == len(statuses) - 1

            filler = fill(mount, leave_bytes=8 * MB)  # something else fills the disk past the reserve
            assert disk_health(instance) == (503, False)
            added = http.post("/memories/", json={"content": "The lighthouse keeper is called Brannagh."})
            assert added.status_code == 507
            bulk = http.post("/memories/bulk", json={"items": [{"content": "An invented fact."}]})
            assert bulk.status_code == 507
            assert http.post("/memories/search", json={"query": "lighthouse"}).status_code == 200
            # Ingestion that had no room waits with the reason instead of filling the disk.
            states = {d["id"]: d for d in (http.get(f"/documents/{i}").json() for i in accepted)}
            paused = [d for d in states.values() if d["status"] == "paused"]
            assert all(d["error"].startswith("Paused: Not enough disk space to store noise-") for d in paused)

            filler.unlink()
            for document_id in accepted[1:]:  # the user makes room
                assert http.delete(f"/documents/{document_id}").status_code == 204
            assert (
                disk_health(instance)[1] is True
            )  # (the status: 200 unless a check is slow on a busy machine)
            added = http.post("/memories/", json={"content": "The lighthouse keeper is called Brannagh."})
            assert added.status_code == 201
            deadline = time.monotonic() + 180  # a paused document is resumed by the minute's sweep
            while (kept := http.get(f"/documents/{accepted[0]}").json())["status"] != "ready":
                assert time.monotonic() < deadline, (kept["status"], kept["error"])
                time.sleep(2)
        finally:
            instance.stop()
            log = (mount / "gunicorn.log").read_text()
            (tmp_path / "gunicorn.log").write_text(log)  # kept after the file system goes
        assert log.count("Booting worker") == 1, log[-3000:]  # one worker throughout: it never died
        assert "SIGBUS" not in log and "Traceback" not in log, log[-3000:]
