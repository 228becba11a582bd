"""The archive reader's refusals, each on a small archive built for it: what a crafted or damaged export can be,
and the message an operator reads for it (issue 33, item 4)."""

import zipfile
from pathlib import Path

import pytest

from console import archive
from console.archive import ArchiveReader, PortabilityError

pytestmark = pytest.mark.unit

ROW = b'{"model": "memories.memory", "pk": 1, "fields": {}}\n'


def archive_of(tmp_path: Path, members: dict[str, bytes]) -> Path:
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w") as written:
        for name, content in members.items():
            written.writestr(name, content)
    return path


def test_a_file_that_is_not_a_zip_is_refused(tmp_path):
    path = tmp_path / "notes.zip"
    path.write_text("plain text, not an archive")
    with pytest.raises(PortabilityError, match=r"not a Mnemo export archive \(BadZipFile\)"):
        ArchiveReader(path)


@pytest.mark.parametrize("missing", [archive.MANIFEST, archive.DATA])
def test_an_archive_without_its_manifest_or_data_is_refused_by_name(tmp_path, missing):
    members = {archive.MANIFEST: b"{}", archive.DATA: ROW}
    del members[missing]
    with pytest.raises(PortabilityError, match=f"it has no {missing}"):
        ArchiveReader(archive_of(tmp_path, members))


def test_an_archive_declaring_more_than_the_limit_is_refused_before_anything_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "MAX_UNPACKED_BYTES", 100)
    path = archive_of(tmp_path, {archive.MANIFEST: b"{}", archive.DATA: ROW * 3})
    with pytest.raises(PortabilityError, match="unpacks to more than"):
        ArchiveReader(path)


@pytest.mark.parametrize(
    ("manifest", "refusal"),
    [(b"{not json", "is not JSON"), (b"[1, 2]", "is not a JSON object"), (b"[" * 100_000, "is not JSON")],
)
def test_a_manifest_that_is_not_a_json_object_is_refused(tmp_path, manifest, refusal):
    with ArchiveReader(archive_of(tmp_path, {archive.MANIFEST: manifest, archive.DATA: ROW})) as reader:
        with pytest.raises(PortabilityError, match=refusal):
            reader.manifest()


def test_a_manifest_over_its_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "MAX_MANIFEST_BYTES", 10)
    with ArchiveReader(
        archive_of(tmp_path, {archive.MANIFEST: b'{"a": "' + b"x" * 20 + b'"}', archive.DATA: ROW})
    ) as reader:
        with pytest.raises(PortabilityError, match="manifest.json is over"):
            reader.manifest()


def test_rows_past_the_row_limit_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "MAX_ROWS", 2)
    with ArchiveReader(archive_of(tmp_path, {archive.MANIFEST: b"{}", archive.DATA: ROW * 3})) as reader:
        rows = reader.rows()
        assert [position for position, _ in (next(rows), next(rows))] == [1, 2]
        with pytest.raises(PortabilityError, match="holds more than 2 rows"):
            next(rows)


def test_a_data_file_bigger_than_it_declared_is_stopped_at_the_bytes_really_read(tmp_path, monkeypatch):
    path = archive_of(tmp_path, {archive.MANIFEST: b"{}", archive.DATA: ROW * 3})
    with ArchiveReader(path) as reader:
        monkeypatch.setattr(archive, "MAX_UNPACKED_BYTES", len(ROW) * 2)
        with pytest.raises(PortabilityError, match="data.jsonl holds more than"):
            list(reader.rows())


def test_a_damaged_data_file_is_refused_with_the_reason(tmp_path):
    path = archive_of(tmp_path, {archive.MANIFEST: b"{}", archive.DATA: ROW * 50})
    content = bytearray(path.read_bytes())
    start = content.index(b"data.jsonl") + len(
        b"data.jsonl"
    )  # the local header's name, then the stored bytes
    content[start : start + 40] = b"\xff" * 40
    path.write_bytes(bytes(content))
    with ArchiveReader(path) as reader:
        with pytest.raises(PortabilityError, match=r"data.jsonl could not be read \(BadZipFile\)"):
            list(reader.rows())


def test_a_file_the_archive_lacks_has_no_size_and_cannot_be_read(tmp_path):
    with ArchiveReader(archive_of(tmp_path, {archive.MANIFEST: b"{}", archive.DATA: ROW})) as reader:
        assert reader.file_size("ab/cd.png") is None
        with pytest.raises(PortabilityError, match=r"files/ab/cd.png could not be read \(KeyError\)"):
            reader.file("ab/cd.png")
