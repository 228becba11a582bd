"""The file formats the knowledge base reads: one Format record per kind, and the registry of them.

Everything that knows about file types reads this registry: the sniffing that decides what a file really is
(knowledge.pipeline.sniff), the converter convert_to_markdown calls, the upload form's accept list, the check of
an upload's name (knowledge.services, for the pages and the API alike), the library page's list of types and the
API's documentation. Adding a format is one record here (or `register(...)` from elsewhere) plus its tests.
"""

from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from core.stored_text import gettext_noop
from knowledge.pipeline import converters as c

# How a kind is recognised: "binary" and "image" by `magic` (images are interchangeable: a .png that is really a
# JPEG is read as a JPEG), "zip" by the archive's member names (`zip_members`), "text" by the name once the bytes
# decode as text.
Family = Literal["binary", "image", "zip", "text"]


@dataclass(frozen=True)
class Format:
    name: str  # the kind: stored as Document.mime, given to MarkItDown as the extension
    extensions: tuple[str, ...]  # lower case, without the dot
    mime_types: tuple[str, ...]  # the first is what the converter is told
    description: str  # how a message names such a file: "a PDF", "an EPUB e-book"
    damaged: str  # what a message about such a file that cannot be read starts with
    convert: Callable[[c.Source], c.Extracted]  # a module-level function: a conversion child unpickles it
    family: Family
    # Whether the first bytes are this kind (binary and image families); a module-level function, as `convert`.
    magic: Callable[[bytes], bool] | None = None
    # For binary data no signature recognised: whether this kind's header sits somewhere after junk.
    loose_magic: Callable[[bytes], bool] | None = None
    # What the bytes of a file named as this kind are said to lack when they are of no known type at all.
    wrong_start: str = ""
    # A ZIP-based kind: whether these member names (and the first bytes) are this kind.
    zip_members: Callable[[bytes, list[str]], bool] | None = None
    no_text_hint: str = ""  # added to "No text could be extracted from <name>"


# --- Signatures ----------------------------------------------------------------------------------------------------


def _pdf(head: bytes) -> bool:
    return head.startswith(b"%PDF-")


def _pdf_after_junk(head: bytes) -> bool:
    return b"%PDF-" in head[:1024]  # readers accept junk before the header, but text mentioning %PDF- is text


def _png(head: bytes) -> bool:
    return head.startswith(b"\x89PNG\r\n\x1a\n")


def _jpeg(head: bytes) -> bool:
    return head.startswith(b"\xff\xd8\xff")


def _gif(head: bytes) -> bool:
    return head[:6] in (b"GIF87a", b"GIF89a")


def _webp(head: bytes) -> bool:
    return head[:4] == b"RIFF" and head[8:12] == b"WEBP"


def _epub(head: bytes, names: list[str]) -> bool:
    """An archive that declares itself an EPUB is one, whatever else it holds."""
    return names[:1] == ["mimetype"] and b"application/epub+zip" in head[:100]


def _word(head: bytes, names: list[str]) -> bool:
    return not _epub(head, names) and any(member.startswith("word/") for member in names)


def _excel(head: bytes, names: list[str]) -> bool:
    return not _epub(head, names) and any(member.startswith("xl/") for member in names)


def _powerpoint(head: bytes, names: list[str]) -> bool:
    return not _epub(head, names) and any(member.startswith("ppt/") for member in names)


# --- The formats, in the order users read them in "supported are ..." ----------------------------------------------

_OFFICE = "application/vnd.openxmlformats-officedocument"
BUILT_IN = (
    Format(
        "pdf",
        ("pdf",),
        ("application/pdf",),
        gettext_noop("a PDF"),
        gettext_noop("This PDF is damaged or encrypted"),
        c.convert_pdf,
        "binary",
        magic=_pdf,
        loose_magic=_pdf_after_junk,
        wrong_start=gettext_noop("does not start like a PDF file"),
        no_text_hint=gettext_noop(": it may be a scanned document, and there is no OCR here"),
    ),
    Format(
        "docx",
        ("docx",),
        (f"{_OFFICE}.wordprocessingml.document",),
        gettext_noop("a Word document (.docx)"),
        gettext_noop("This Word document is damaged"),
        c.convert_document,
        "zip",
        zip_members=_word,
    ),
    Format(
        "xlsx",
        ("xlsx",),
        (f"{_OFFICE}.spreadsheetml.sheet",),
        gettext_noop("an Excel workbook (.xlsx)"),
        gettext_noop("This Excel workbook is damaged"),
        c.convert_workbook,
        "zip",
        zip_members=_excel,
    ),
    Format(
        "pptx",
        ("pptx",),
        (f"{_OFFICE}.presentationml.presentation",),
        gettext_noop("a PowerPoint presentation (.pptx)"),
        gettext_noop("This PowerPoint presentation is damaged"),
        c.convert_presentation,
        "zip",
        zip_members=_powerpoint,
    ),
    Format(
        "epub",
        ("epub",),
        ("application/epub+zip",),
        gettext_noop("an EPUB e-book"),
        gettext_noop("This EPUB e-book is damaged"),
        c.convert_document,
        "zip",
        zip_members=_epub,
    ),
    Format(
        "html",
        ("html", "htm"),
        ("text/html",),
        gettext_noop("an HTML page"),
        gettext_noop("This HTML page could not be read"),
        c.convert_html,
        "text",
    ),
    Format(
        "csv",
        ("csv",),
        ("text/csv",),
        gettext_noop("a CSV file"),
        gettext_noop("This CSV file could not be read"),
        c.convert_csv,
        "text",
    ),
    Format(
        "json",
        ("json",),
        ("application/json",),
        gettext_noop("a JSON file"),
        gettext_noop("This JSON file could not be read"),
        c.convert_json,
        "text",
    ),
    Format(
        "txt",
        ("txt",),
        ("text/plain",),
        gettext_noop("plain text"),
        gettext_noop("This text file could not be read"),
        c.convert_plain,
        "text",
    ),
    Format(
        "md",
        ("md", "markdown"),
        ("text/markdown",),
        gettext_noop("a Markdown file"),
        gettext_noop("This Markdown file could not be read"),
        c.convert_plain,
        "text",
    ),
    Format(
        "png",
        ("png",),
        ("image/png",),
        gettext_noop("a PNG image"),
        gettext_noop("This image is damaged"),
        c.convert_image,
        "image",
        _png,
    ),
    Format(
        "jpeg",
        ("jpg", "jpeg"),
        ("image/jpeg",),
        gettext_noop("a JPEG image"),
        gettext_noop("This image is damaged"),
        c.convert_image,
        "image",
        _jpeg,
    ),
    Format(
        "gif",
        ("gif",),
        ("image/gif",),
        gettext_noop("a GIF image"),
        gettext_noop("This image is damaged"),
        c.convert_image,
        "image",
        _gif,
    ),
    Format(
        "webp",
        ("webp",),
        ("image/webp",),
        gettext_noop("a WebP image"),
        gettext_noop("This image is damaged"),
        c.convert_image,
        "image",
        _webp,
    ),
)


# --- The registry --------------------------------------------------------------------------------------------------

_FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    """Add a format; its name and extensions must be new."""
    taken = {extension for known in _FORMATS.values() for extension in known.extensions}
    if fmt.name in _FORMATS or taken.intersection(fmt.extensions):
        raise ValueError(f"the format {fmt.name} or one of its extensions {fmt.extensions} is already known")
    if fmt.family in ("binary", "image") and fmt.magic is None:
        raise ValueError(f"the {fmt.family} format {fmt.name} needs a magic rule")
    if fmt.family == "zip" and fmt.zip_members is None:
        raise ValueError(f"the ZIP-based format {fmt.name} needs a zip_members rule")
    _FORMATS[fmt.name] = fmt
    return fmt


def unregister(name: str) -> None:
    del _FORMATS[name]


@contextmanager
def registered(fmt: Format) -> Iterator[Format]:
    """`fmt` known for the duration of the block (a test's made-up format)."""
    register(fmt)
    try:
        yield fmt
    finally:
        unregister(fmt.name)


def formats() -> tuple[Format, ...]:
    return tuple(_FORMATS.values())


def install(known: tuple[Format, ...]) -> None:
    """Know exactly these formats: a conversion child takes its parent's registry, which may hold formats
    registered after the fork server that starts children imported this module."""
    if known != formats():
        _FORMATS.clear()
        for fmt in known:
            register(fmt)


def get(kind: str) -> Format:
    return _FORMATS[kind]


def kind_by_extension() -> dict[str, str]:
    """Extension (lower case, no dot) -> kind, in the registry's order."""
    return {extension: fmt.name for fmt in _FORMATS.values() for extension in fmt.extensions}


def accept() -> str:
    """The upload picker's accept attribute: every extension, sorted (only a hint: the bytes are checked)."""
    return ",".join(f".{extension}" for extension in sorted(kind_by_extension()))


class Extensions(AbstractSet[str]):
    """Every supported extension, read from the registry each time (so formats registered later count)."""

    def __contains__(self, extension: object) -> bool:
        return extension in kind_by_extension()

    def __iter__(self) -> Iterator[str]:
        return iter(kind_by_extension())

    def __len__(self) -> int:
        return len(kind_by_extension())


SUPPORTED = Extensions()

for _fmt in BUILT_IN:
    register(_fmt)
