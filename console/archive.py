"""Reading an export archive within limits: the manifest, the data rows one line at a time, the files.

Nothing is unpacked whole. The data file is streamed line by line with a cap on each line, on the number of rows
and on the bytes actually read (a ZIP's declared sizes can lie), so a crafted archive costs at most one capped
line of memory: a 122 KB archive whose data file was 120 MB of newlines once held the server for 147 s and
1.6 GB. A file is read only when the row that names it is written, and no more than the upload limit.
"""

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _

from core.errors import RequestRefused

MANIFEST = "manifest.json"
DATA = "data.jsonl"
FILES = "files/"
MAX_UNPACKED_BYTES = 1024**3  # what an archive may declare, and what its data file may really hold
MAX_ROW_BYTES = 32 * 1024**2  # one row as JSON: a document's converted Markdown is the largest
MAX_ROWS = 2_000_000
MAX_MANIFEST_BYTES = 1024**2


class PortabilityError(RequestRefused):
    """An archive that cannot be imported; the message says why (and which row)."""


def _megabytes(size: int) -> str:
    return f"{size / 1024**2:,.0f} MB"


class ArchiveReader:
    """An open export archive. Use as a context manager; every refusal is a PortabilityError."""

    def __init__(self, path: Path):
        try:
            self.zip = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile, ValueError) as exc:
            raise PortabilityError(
                _("this is not a Mnemo export archive (%(type)s)") % {"type": type(exc).__name__}
            ) from None
        self.members = {member.filename: member for member in self.zip.infolist()}
        declared = sum(member.file_size for member in self.members.values())
        if declared > MAX_UNPACKED_BYTES:
            self.zip.close()
            raise PortabilityError(
                _("the archive unpacks to more than %(megabytes)s")
                % {"megabytes": _megabytes(MAX_UNPACKED_BYTES)}
            )
        for name in (MANIFEST, DATA):
            if name not in self.members:
                self.zip.close()
                raise PortabilityError(
                    _("this is not a Mnemo export archive (it has no %(name)s)") % {"name": name}
                )

    def __enter__(self) -> "ArchiveReader":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.zip.close()

    def manifest(self) -> dict[str, Any]:
        raw = self._read(MANIFEST, MAX_MANIFEST_BYTES)
        try:
            manifest = json.loads(raw)
        except (ValueError, RecursionError):
            raise PortabilityError(_("%(manifest)s is not JSON") % {"manifest": MANIFEST}) from None
        if not isinstance(manifest, dict):
            raise PortabilityError(_("%(manifest)s is not a JSON object") % {"manifest": MANIFEST})
        return manifest

    def rows(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(row number from 1, row) for each line of the data file, each a JSON object of bounded size."""
        read = 0
        try:
            with self.zip.open(DATA) as data:
                position = 0
                while True:
                    line = data.readline(MAX_ROW_BYTES + 1)
                    if not line:
                        return
                    position += 1
                    read += len(line)
                    if read > MAX_UNPACKED_BYTES:
                        raise PortabilityError(
                            _("%(data)s holds more than %(megabytes)s")
                            % {"data": DATA, "megabytes": _megabytes(MAX_UNPACKED_BYTES)}
                        )
                    if len(line) > MAX_ROW_BYTES:
                        raise PortabilityError(
                            _("row %(position)s is over %(megabytes)s as JSON")
                            % {"position": position, "megabytes": _megabytes(MAX_ROW_BYTES)}
                        )
                    if position > MAX_ROWS:
                        raise PortabilityError(
                            _("%(data)s holds more than %(max_rows)s rows")
                            % {"data": DATA, "max_rows": f"{MAX_ROWS:,}"}
                        )
                    yield position, _parsed(line, position)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise PortabilityError(
                _("%(data)s could not be read (%(type)s)") % {"data": DATA, "type": type(exc).__name__}
            ) from None

    def file_size(self, stored: str) -> int | None:
        """The declared size of the file a row names, None when the archive lacks it."""
        member = self.members.get(FILES + stored)
        return None if member is None else member.file_size

    def file(self, stored: str) -> bytes:
        return self._read(FILES + stored, max_file_bytes())

    def _read(self, name: str, limit: int) -> bytes:
        try:
            with self.zip.open(name) as member:
                content = member.read(limit + 1)
        except (KeyError, zipfile.BadZipFile, OSError, EOFError) as exc:
            raise PortabilityError(
                _("%(name)s could not be read (%(type)s)") % {"name": name, "type": type(exc).__name__}
            ) from None
        if len(content) > limit:
            raise PortabilityError(
                _("%(name)s is over %(megabytes)s") % {"name": name, "megabytes": _megabytes(limit)}
            )
        return content


def max_file_bytes() -> int:
    """A file in an archive may be as large as an upload (a document or a perceptual memory's file)."""
    return settings.MNEMO_MAX_UPLOAD_MB * 1024 * 1024


def _parsed(line: bytes, position: int) -> dict[str, Any]:
    if not line.strip():
        raise PortabilityError(
            _("row %(position)s is empty: each line of %(data)s is one row")
            % {"position": position, "data": DATA}
        )
    try:
        row = json.loads(line)
    except UnicodeDecodeError:
        raise PortabilityError(_("row %(position)s is not UTF-8 text") % {"position": position}) from None
    except (ValueError, RecursionError):
        raise PortabilityError(_("row %(position)s is not JSON") % {"position": position}) from None
    if not isinstance(row, dict) or not isinstance(row.get("fields"), dict) or "pk" not in row:
        raise PortabilityError(
            f'row {position} is not a row of an export (an object with "model", "pk", "fields")'
        )
    return row
