"""File to Markdown for the knowledge base: check what a file really is, convert it offline, make it safe.

No Django here, so the upload view, the Celery task and a management command share one code path. Nothing calls
the network: MarkItDown's converters run locally, and only a caller that passes an LLM client gets image
descriptions (that call is the caller's choice). Every failure becomes a ConversionError whose message can be
shown to the user as it is; the traceback goes to the log.

The type is decided from the bytes, not trusted from the name: an upload whose extension lies about its binary
type is refused with what it really is, and each kind goes to exactly one MarkItDown converter, so a damaged
.docx can never fall through to MarkItDown's ZIP or plain-text converters and be indexed as XML soup.
"""

import codecs
import io
import json
import logging
import os
import re
import shutil
import unicodedata
import warnings
import zipfile
import zlib
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from core.limits import clean_text
from core.stored_text import Text, gettext_noop
from core.text import without_paths
from knowledge.pipeline.locations import Part, pdf_pages, workbook_sheets

logger = logging.getLogger(__name__)

# Extension (lower case, no dot) -> kind. The order is the order users read in the "supported are" message.
KIND_BY_EXTENSION = {
    "pdf": "pdf",
    "docx": "docx",
    "xlsx": "xlsx",
    "pptx": "pptx",
    "epub": "epub",
    "html": "html",
    "htm": "html",
    "csv": "csv",
    "json": "json",
    "txt": "txt",
    "md": "md",
    "markdown": "md",
    "png": "png",
    "jpg": "jpeg",
    "jpeg": "jpeg",
    "gif": "gif",
    "webp": "webp",
}
SUPPORTED = frozenset(KIND_BY_EXTENSION)
TEXT_KINDS = frozenset({"html", "csv", "json", "txt", "md"})
IMAGE_KINDS = frozenset({"png", "jpeg", "gif", "webp"})
ZIP_KINDS = frozenset({"docx", "xlsx", "pptx", "epub"})

HEAD_BYTES = 64 * 1024  # how much of a file detect_kind needs to see
# Office files and EPUBs are ZIP archives: a 1 MB upload once unpacked to 7.2 GB in memory. Their declared
# sizes are read before anything is unpacked; real documents stay far below these.
MAX_UNPACKED_BYTES = 200 * 1024 * 1024
MAX_ARCHIVE_MEMBERS = 5_000
# Their markup (XML, XHTML) is what the converters parse: measured here (2 shared cores, busy) at 40-60 MB of
# memory and 6-8 s per MB of XML (.docx and .xlsx of 2 and 8 MB); a 453 KB .docx holding 150 MB of XML held a
# converter for the whole 300 s at 2.2 GB. 16 MB is about a thousand pages of text or 100,000 spreadsheet cells,
# and at most about two minutes and 1 GB. Counted as it unpacks, not only as declared.
MAX_MARKUP_BYTES = 16 * 1024 * 1024
MARKUP_SUFFIXES = (".xml", ".rels", ".xhtml", ".html", ".htm", ".opf", ".ncx")
# pdfplumber reads about six pages a second here: a thousand pages is three minutes of a worker.
MAX_PDF_PAGES = 1_000
MAX_NAME_CHARS = 100
_MAX_NAME_BYTES = 240  # most filesystems allow 255 bytes per name; a Chinese character takes 3 in UTF-8

_WHAT = {
    "pdf": gettext_noop("a PDF"),
    "docx": gettext_noop("a Word document (.docx)"),
    "xlsx": gettext_noop("an Excel workbook (.xlsx)"),
    "pptx": gettext_noop("a PowerPoint presentation (.pptx)"),
    "epub": gettext_noop("an EPUB e-book"),
    "png": gettext_noop("a PNG image"),
    "jpeg": gettext_noop("a JPEG image"),
    "gif": gettext_noop("a GIF image"),
    "webp": gettext_noop("a WebP image"),
    "zip": gettext_noop("a ZIP archive"),
    "ole": gettext_noop("an Office 97-2003 file or a password-protected Office file"),
    "exe": gettext_noop("a program"),
    "archive": gettext_noop("a compressed archive"),
    "text": gettext_noop("plain text"),
    "binary": gettext_noop("binary data of an unknown type"),
}
_DAMAGED = {
    "pdf": gettext_noop("This PDF is damaged or encrypted"),
    "docx": gettext_noop("This Word document is damaged"),
    "xlsx": gettext_noop("This Excel workbook is damaged"),
    "pptx": gettext_noop("This PowerPoint presentation is damaged"),
    "epub": gettext_noop("This EPUB e-book is damaged"),
    "html": gettext_noop("This HTML page could not be read"),
    "csv": gettext_noop("This CSV file could not be read"),
}
_MIME = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "epub": "application/epub+zip",
    "html": "text/html",
    "csv": "text/csv",
    "png": "image/png",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
}
_DESCRIPTION = "# Description:"  # how MarkItDown introduces an LLM's description of an image
IMAGE_NOTICE = Text(
    gettext_noop(
        "Only the image's metadata (size, format and embedded tags) was extracted: the picture itself is not read "
        "and there is no OCR. Configure an LLM to get a description of images."
    )
)


class ConversionError(Exception):
    """A conversion failure; its message is written for the user who uploaded the file."""

    def __init__(self, message: str, *, out_of_memory: bool = False):
        super().__init__(message)
        self.message = message
        self.out_of_memory = out_of_memory


@dataclass(frozen=True)
class Converted:
    markdown: str
    kind: str
    title: str
    notice: str = ""
    # The text to index, each part with the page or sheet it came from; none for an image whose only text is its
    # metadata (size, format, tags), which is kept in `markdown` to show but is not the picture's content.
    parts: tuple[Part, ...] = ()


# --- Names ---------------------------------------------------------------------------------------------------------

_UNSAFE_NAME_CHARS = re.compile(r'[<>:"|?*]')


def safe_filename(name: str, *, max_chars: int = MAX_NAME_CHARS) -> str:
    """A name safe to store and to show: no directories, no control or bidi characters, bounded, never empty.

    Letters of every script stay (Chinese names are kept as they are); the extension is kept when shortening.
    """
    name = unicodedata.normalize("NFC", name or "").replace("\\", "/").rsplit("/", 1)[-1]
    # Cc: control, Cf: format (RTL/LTR overrides, zero-width joiners, BOM), Cs/Co/Cn: surrogates, private, unassigned.
    name = "".join(char for char in name if not unicodedata.category(char).startswith("C"))
    name = " ".join(_UNSAFE_NAME_CHARS.sub("_", name).split())
    stem, dot, extension = name.rpartition(".")
    if not dot or not re.fullmatch(r"[A-Za-z0-9]{1,10}", extension):
        stem, extension = name, ""
    extension = f".{extension.lower()}" if extension else ""
    stem = stem.strip(" ._-") or "document"  # no hidden files, no "..", no trailing dots (Windows drops them)
    stem = stem[: max(1, max_chars - len(extension))].rstrip(" ._-") or "document"
    while len((stem + extension).encode("utf-8")) > _MAX_NAME_BYTES:
        stem = stem[:-1]
    return stem + extension


def _extension(filename: str) -> str:
    stem, dot, extension = filename.rpartition(".")
    return extension.lower() if dot and stem else ""


# --- Detection -----------------------------------------------------------------------------------------------------


def detect_kind(data_head: bytes, filename: str) -> str:
    """The kind of a file from its first bytes (HEAD_BYTES is enough) and its name; raises ConversionError.

    Binary formats are recognised by their signatures, ZIP-based ones by the names of their members. A file
    whose extension claims one binary type while its bytes are another (or are plain text) is refused with what
    it really is; text files are told apart by extension once the bytes decode as text.
    """
    return _detect(data_head, safe_filename(filename), zip_names=None)


def _detect(head: bytes, name: str, zip_names: list[str] | None) -> str:
    if not head:
        raise ConversionError(Text(gettext_noop("The file is empty")))
    extension = _extension(name)
    claimed = KIND_BY_EXTENSION.get(extension)
    if extension and claimed is None:
        raise ConversionError(
            Text(
                gettext_noop("Unsupported file type .%(extension)s: supported are %(supported)s"),
                extension=extension,
                supported=", ".join(KIND_BY_EXTENSION),
            )
        )
    real = _sniff(head, zip_names)
    if real == "zip-partial":  # benefit of the doubt; convert_to_markdown lists the whole archive
        real = claimed if claimed in ZIP_KINDS else "zip"
    if claimed is None:  # no extension: trust the content when it is something we read
        if real == "text":
            return "txt"
        if real in KIND_BY_EXTENSION.values():
            return real
        raise ConversionError(
            Text(
                gettext_noop("%(name)s has no extension and is %(what)s, which is not supported"),
                name=name,
                what=Text(_WHAT[real]),
            )
        )
    if real == claimed or (claimed in IMAGE_KINDS and real in IMAGE_KINDS):
        return real  # a .png that is really a JPEG is still an image we read the same way
    if claimed in TEXT_KINDS and real == "text":
        return claimed
    if claimed == "pdf" and real == "binary":
        raise ConversionError(
            Text(
                gettext_noop("This PDF is damaged or encrypted: %(name)s does not start like a PDF file"),
                name=name,
            )
        )
    advice = Text(
        gettext_noop("save it in a current format without a password")
        if real == "ole"
        else gettext_noop("upload the original file")
    )
    raise ConversionError(
        Text(
            gettext_noop("%(name)s is named .%(extension)s but is really %(what)s; %(advice)s"),
            name=name,
            extension=extension,
            what=Text(_WHAT[real]),
            advice=advice,
        )
    )


def _sniff(head: bytes, zip_names: list[str] | None) -> str:
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08"):
        kind = _zip_kind(head, zip_names if zip_names is not None else _zip_names_in_head(head))
        if kind == "zip" and zip_names is None and b"PK\x05\x06" not in head:
            return "zip-partial"  # the members that tell docx from zip may come after the head
        return kind
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return "ole"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:2] == b"MZ" or head[:4] in (b"\x7fELF", b"\xca\xfe\xba\xbe", b"\xcf\xfa\xed\xfe"):
        return "exe"
    if head[:2] == b"\x1f\x8b" or head[:6] == b"7z\xbc\xaf\x27\x1c" or head[:4] == b"Rar!":
        return "archive"
    if _looks_like_text(head):
        return "text"
    if b"%PDF-" in head[:1024]:  # readers accept junk before the header, but text mentioning %PDF- is text
        return "pdf"
    return "binary"


def _zip_kind(head: bytes, names: list[str]) -> str:
    if names[:1] == ["mimetype"] and b"application/epub+zip" in head[:100]:
        return "epub"
    for prefix, kind in (("word/", "docx"), ("xl/", "xlsx"), ("ppt/", "pptx")):
        if any(member.startswith(prefix) for member in names):
            return kind
    return "zip"


def _zip_names_in_head(head: bytes) -> list[str]:
    """Member names from the local file headers in the first bytes (the central directory is at the end)."""
    names = []
    for match in re.finditer(rb"PK\x03\x04", head):
        start = match.start()
        if start + 30 > len(head):
            break
        length = int.from_bytes(head[start + 26 : start + 28], "little")
        raw = head[start + 30 : start + 30 + length]
        if len(raw) == length:
            names.append(raw.decode("utf-8", errors="replace"))
    return names


def _zip_names(path: Path, name: str) -> list[str] | None:
    """The archive's member names, once its size, member count and markup are within the limits."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            if len(members) > MAX_ARCHIVE_MEMBERS:
                raise ConversionError(
                    Text(
                        gettext_noop("%(name)s holds %(count)s files inside; the limit is %(limit)s"),
                        name=name,
                        count=f"{len(members):,}",
                        limit=f"{MAX_ARCHIVE_MEMBERS:,}",
                    )
                )
            unpacked = sum(member.file_size for member in members)
            if unpacked > MAX_UNPACKED_BYTES:
                raise ConversionError(
                    Text(
                        gettext_noop("%(name)s would unpack to %(size)s MB; the limit is %(limit)s MB"),
                        name=name,
                        size=f"{unpacked / 2**20:,.0f}",
                        limit=MAX_UNPACKED_BYTES // 2**20,
                    )
                )
            _check_markup(archive, name)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error):
        return None  # damaged: judge by the local headers, the converter will report the damage
    return [member.filename for member in members]


def _check_markup(archive: zipfile.ZipFile, name: str) -> None:
    """Refuse an archive whose markup unpacks past MAX_MARKUP_BYTES: the declared sizes first, then the bytes as
    they really unpack (at most the limit is ever read)."""
    markup = [m for m in archive.infolist() if m.filename.lower().endswith(MARKUP_SUFFIXES)]
    declared = sum(member.file_size for member in markup)
    if declared > MAX_MARKUP_BYTES:
        raise _too_much_markup(name, declared)
    unpacked = 0
    for member in markup:
        with archive.open(member) as stream:
            while block := stream.read(1 << 20):
                unpacked += len(block)
                if unpacked > MAX_MARKUP_BYTES:
                    raise _too_much_markup(name, unpacked, at_least=True)


def _too_much_markup(name: str, size: int, *, at_least: bool = False) -> ConversionError:
    amount = Text(
        gettext_noop("more than %(size)s MB") if at_least else gettext_noop("%(size)s MB"),
        size=f"{size / 2**20:,.0f}",
    )
    return ConversionError(
        Text(
            gettext_noop(
                "%(name)s holds %(amount)s of XML once unpacked; the limit is %(limit)s MB "
                "(split it into smaller documents)"
            ),
            name=name,
            amount=amount,
            limit=MAX_MARKUP_BYTES // 2**20,
        )
    )


def unpacked_sizes(path: str | Path) -> tuple[int, int] | None:
    """An Office file's or EPUB's declared unpacked sizes (markup, everything else); None for any other file."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    markup = sum(m.file_size for m in members if m.filename.lower().endswith(MARKUP_SUFFIXES))
    return markup, sum(m.file_size for m in members) - markup


_TEXT_CONTROLS = frozenset("\t\n\r\f\v\x1b")


def _looks_like_text(head: bytes) -> bool:
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    if b"\x00" in head:
        return False
    for encoding in ("utf-8-sig", "gb18030", "cp1252"):
        try:
            # final=False: the head may end in the middle of a multi-byte character.
            text = codecs.getincrementaldecoder(encoding)().decode(head, final=False)
        except UnicodeDecodeError:
            continue
        controls = sum(1 for char in text if (char < " " and char not in _TEXT_CONTROLS) or char == "\x7f")
        return controls <= len(text) // 100
    return False


def decode_text(data: bytes) -> tuple[str, str]:
    """Text and the encoding that read it: a BOM, else UTF-8, else GB18030 (Chinese), else Windows-1252."""
    if data.startswith(codecs.BOM_UTF16_LE) or data.startswith(codecs.BOM_UTF16_BE):
        candidates = ["utf-16"]
    else:
        candidates = ["utf-8-sig", "gb18030", "cp1252"]
    for encoding in candidates:
        try:
            return data.decode(encoding), encoding.removesuffix("-sig")
        except UnicodeDecodeError:
            continue
    raise ConversionError(
        Text(gettext_noop("This file could not be read as text: it is not UTF-8, GB18030 or Windows-1252"))
    )


# --- Conversion ----------------------------------------------------------------------------------------------------


def convert_to_markdown(
    path: str | Path, *, filename: str, llm_client=None, llm_model: str | None = None
) -> Converted:
    """Markdown of a stored upload; ``filename`` is the name the user gave it (it decides among text kinds)."""
    path = Path(path)
    name = safe_filename(filename)
    with path.open("rb") as handle:
        head = handle.read(HEAD_BYTES)
    zip_names = _zip_names(path, name) if head[:2] == b"PK" else None
    kind = _detect(head, name, zip_names)
    llm = {"llm_client": llm_client} if llm_client is not None else {}
    if llm_model is not None:
        llm["llm_model"] = llm_model

    if kind == "pdf":
        _check_pdf_pages(path, name)
    notice = ""
    parts: list[Part] | None = None  # None: the whole text, from nowhere in particular
    if kind in IMAGE_KINDS:
        markdown, title, notice = _convert_image(path, kind, name, llm)
        if _DESCRIPTION not in markdown:
            parts = []
    elif kind in TEXT_KINDS:
        markdown, title, notice = _convert_text(path.read_bytes(), kind, name)
    elif kind == "pdf":
        parts, title = _convert_pdf(path, name)
        markdown = "\n\n".join(part.markdown for part in parts)
    else:
        markdown, title = _markitdown(path, kind, name, llm)
        if kind == "pptx":
            markdown = re.sub(r"<!-- Slide number: \d+ -->\n?", "", markdown)
        if kind == "xlsx":
            parts = workbook_sheets(markdown)
    markdown = clean_markdown(normalise_text(markdown))
    if parts is None:
        parts = [Part(markdown)]
    elif parts:  # each part cleaned on its own, and the whole text is theirs
        parts = [replace(part, markdown=clean_markdown(normalise_text(part.markdown))) for part in parts]
        parts = [part for part in parts if part.markdown]
        markdown = "\n\n".join(part.markdown for part in parts)
    if not re.search(r"\w", markdown):
        hint = (
            Text(gettext_noop(": it may be a scanned document, and there is no OCR here"))
            if kind == "pdf"
            else ""
        )
        raise ConversionError(
            Text(gettext_noop("No text could be extracted from %(name)s%(hint)s"), name=name, hint=hint)
        )
    title = normalise_text(_one_line(title)) or _first_heading(markdown) or name.rsplit(".", 1)[0]
    return Converted(markdown=markdown, kind=kind, title=title[:200], notice=notice, parts=tuple(parts))


def _convert_pdf(path: Path, name: str) -> tuple[list[Part], str]:
    """A PDF page by page (knowledge.pipeline.locations), so each chunk knows its page; a file pypdfium2 cannot
    split is converted whole, and MarkItDown says what is wrong with it."""
    from markitdown.converters import PdfConverter
    from pypdfium2 import PdfiumError

    converter = PdfConverter()
    try:
        return [
            Part(_markitdown(data, "pdf", name, {}, converter=converter)[0], page=number)
            for number, data in pdf_pages(path)
        ], ""
    except PdfiumError:
        markdown, title = _markitdown(path, "pdf", name, {})
        return [Part(markdown)], title


def _markitdown(
    source: Path | bytes, kind: str, name: str, options: dict, *, converter=None
) -> tuple[str, str]:
    """Convert with MarkItDown, told the kind we checked; bytes of a text kind are UTF-8 text we already decoded.
    ``converter``: that MarkItDown converter directly, without MarkItDown's guess at the file's type."""
    from markitdown import MissingDependencyException, StreamInfo

    info = StreamInfo(extension=f".{kind}", mimetype=_MIME[kind], filename=name)
    if isinstance(source, bytes) and kind in TEXT_KINDS:
        info = info.copy_and_update(charset="utf-8")
    try:
        with io.BytesIO(source) if isinstance(source, bytes) else source.open("rb") as stream:
            if converter is not None:
                result = converter.convert(stream, info, **options)
            else:
                result = _converter().convert_stream(stream, stream_info=info, **options)
    except MissingDependencyException as exc:
        what = Text(_WHAT[kind]) if kind in _WHAT else kind
        raise ConversionError(
            Text(gettext_noop("Reading %(what)s is not installed on this server"), what=what)
        ) from exc
    except Exception as exc:
        logger.info("converting %s (%s) failed", name, kind, exc_info=True)
        if isinstance(_cause(exc), MemoryError):
            raise ConversionError(
                Text(gettext_noop("%(name)s needs more memory to convert than allowed"), name=name),
                out_of_memory=True,
            ) from exc
        prefix = (
            Text(_DAMAGED[kind])
            if kind in _DAMAGED
            else Text(gettext_noop("%(name)s could not be converted"), name=name)
        )
        raise ConversionError(
            Text(gettext_noop("%(prefix)s: %(reason)s"), prefix=prefix, reason=error_reason(exc))
        ) from exc
    return result.markdown or "", result.title or ""


def _check_pdf_pages(path: Path, name: str) -> None:
    import pypdfium2  # pdfplumber's own PDF engine: counts pages without parsing them

    try:
        document = pypdfium2.PdfDocument(path)
    except pypdfium2.PdfiumError:
        return  # damaged or encrypted: MarkItDown reports it in its words
    try:
        pages = len(document)
    finally:
        document.close()
    if pages > MAX_PDF_PAGES:
        raise ConversionError(
            Text(
                gettext_noop("%(name)s has %(pages)s pages; the limit is %(limit)s"),
                name=name,
                pages=f"{pages:,}",
                limit=f"{MAX_PDF_PAGES:,}",
            )
        )


@cache
def _converter():
    """One MarkItDown with only the converters this module routes to (no ZIP, plain-text or web fallbacks)."""
    from markitdown import MarkItDown
    from markitdown.converters import (
        CsvConverter,
        DocxConverter,
        EpubConverter,
        HtmlConverter,
        ImageConverter,
        PdfConverter,
        PptxConverter,
        XlsxConverter,
    )

    markitdown = MarkItDown(enable_builtins=False, enable_plugins=False)
    converters = (CsvConverter, DocxConverter, EpubConverter, HtmlConverter, ImageConverter, PdfConverter)
    for converter in (*converters, PptxConverter, XlsxConverter):
        markitdown.register_converter(converter())
    return markitdown


def _cause(exc: BaseException) -> BaseException:
    attempts = getattr(exc, "attempts", None)
    if attempts:  # MarkItDown's FileConversionException wraps what the converter raised
        return attempts[-1].exc_info[1] or exc
    return exc


def error_reason(exc: BaseException) -> str:
    exc = _cause(exc)
    kind = type(exc).__name__
    if "Password" in kind or "Encrypt" in kind:
        return Text(gettext_noop("it is password-protected"))
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else kind
    return without_paths(text)[:200]


def _convert_text(data: bytes, kind: str, name: str) -> tuple[str, str, str]:
    if kind == "html":
        declared = re.search(rb"""<meta[^>]+charset=["']?([\w-]+)""", data[:4096], re.IGNORECASE)
        text, encoding = _decode_html(data, declared.group(1).decode("ascii") if declared else None)
    else:
        text, encoding = decode_text(data)
    notice = (
        ""
        if encoding in ("utf-8", "ascii")
        else Text(gettext_noop("The text was read as %(encoding)s."), encoding=encoding.upper())
    )
    if kind in ("txt", "md"):
        return text, "", notice
    if kind == "json":
        try:
            pretty = json.dumps(json.loads(text), ensure_ascii=False, indent=2)
        except ValueError as exc:
            return (
                _fence(text, "json"),
                "",
                Text(
                    gettext_noop("This is not valid JSON (%(error)s); its text was kept as it is."),
                    error=str(exc),
                ),
            )
        return _fence(pretty, "json"), "", notice
    markdown, title = _markitdown(text.encode("utf-8"), kind, name, {})
    return markdown, title, notice


def _decode_html(data: bytes, declared: str | None) -> tuple[str, str]:
    """UTF-8 first, then the charset the page declares (Shift-JIS, Big5, ...), then the usual fallbacks."""
    codec = _codec(declared)
    if codec and codec != "utf-8":
        for encoding in ("utf-8-sig", codec):
            try:
                return data.decode(encoding), encoding.removesuffix("-sig")
            except UnicodeDecodeError:
                continue
    return decode_text(data)


def _codec(name: str | None) -> str | None:
    try:
        return codecs.lookup(name).name if name else None
    except LookupError:
        return None


def _fence(text: str, language: str) -> str:
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    marker = "`" * (longest + 1)
    return f"{marker}{language}\n{text}\n{marker}"


def _convert_image(path: Path, kind: str, name: str, llm: dict) -> tuple[str, str, str]:
    """Metadata (exiftool when installed, else Pillow) and, only with an LLM, a description of the picture."""
    metadata, title = _image_metadata(path, kind, name)  # also proves the image opens
    options = dict(llm)
    if exiftool := _exiftool_path():
        options["exiftool_path"] = exiftool
    markdown = ""
    if options:
        try:
            markdown, _ = _markitdown(path, kind, name, options)
        except ConversionError:
            markdown = ""  # exiftool or the LLM failed: Pillow's metadata still describes the file
    if not exiftool or not markdown.split(_DESCRIPTION)[0].strip():
        markdown = f"{metadata}\n\n{markdown}"
    if _DESCRIPTION in markdown:
        return (
            markdown,
            title,
            Text(gettext_noop("The image was described by the configured LLM; no OCR was run.")),
        )
    return markdown, title, IMAGE_NOTICE


@cache
def _exiftool_path() -> str | None:
    """exiftool when installed in a system folder (MarkItDown's rule: never one found in a writable PATH entry)."""
    found = shutil.which("exiftool")
    if found and os.path.dirname(os.path.abspath(found)) in ("/usr/bin", "/usr/local/bin", "/opt/bin"):
        return found
    return None


_EXIF_TEXT = {0x010E: "Description", 0x013B: "Artist", 0x8298: "Copyright", 0x0132: "DateTime"}
_EXIF_XP = {0x9C9B: "Title", 0x9C9C: "Comment", 0x9C9D: "Author", 0x9C9E: "Keywords", 0x9C9F: "Subject"}


def _image_metadata(path: Path, kind: str, name: str) -> tuple[str, str]:
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            # Pillow refuses a picture past twice Image.MAX_IMAGE_PIXELS (89 million, a 10,000 × 8,900 scan) before
            # decoding it, and only warns past once it: refused here from once it.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                image.verify()
            with Image.open(path) as image:
                fields = {
                    "ImageSize": f"{image.width}x{image.height}",
                    "Format": image.format or kind.upper(),
                }
                for key, value in image.info.items():  # PNG tEXt/iTXt chunks, GIF comments
                    if isinstance(value, bytes):
                        value = value.decode("utf-8", errors="replace")
                    if isinstance(value, str) and key not in ("icc_profile", "exif", "xmp") and value.strip():
                        fields[str(key).title()] = _one_line(value)[:500]
                exif = image.getexif()
                for tag, label in _EXIF_TEXT.items():
                    if isinstance(exif.get(tag), str) and exif[tag].strip():
                        fields[label] = _one_line(exif[tag])[:500]
                for tag, label in _EXIF_XP.items():  # Windows "XP" tags are UTF-16LE bytes
                    if isinstance(exif.get(tag), bytes):
                        text = exif[tag].decode("utf-16-le", errors="ignore").rstrip("\x00")
                        fields[label] = _one_line(text)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        pixels = re.search(r"\((\d+) pixels\)", str(exc))
        size = (
            Text(gettext_noop(" of %(count)s million pixels"), count=f"{int(pixels.group(1)) / 1e6:,.0f}")
            if pixels
            else ""
        )
        raise ConversionError(
            Text(
                gettext_noop(
                    "%(name)s is an image%(size)s, past the limit of %(limit)s million pixels: it is refused as a "
                    "possible decompression bomb (shrink it and upload it again)"
                ),
                name=name,
                size=size,
                limit=f"{(Image.MAX_IMAGE_PIXELS or 0) / 1e6:,.0f}",
            )
        ) from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ConversionError(
            Text(
                gettext_noop("This image is damaged: %(name)s could not be opened (%(reason)s)"),
                name=name,
                reason=error_reason(exc),
            )
        ) from exc
    lines = [f"{key}: {value}" for key, value in fields.items() if value]
    return "\n".join(lines), fields.get("Title", "")


# --- Clean-up ------------------------------------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# A "<" that opens an HTML tag, comment or processing instruction, unless already backslash-escaped.
_TAG_OPEN = re.compile(r"(?<!\\)((?:\\\\)*)<(?=/?[A-Za-z][A-Za-z0-9-]*(?:[\s/>]|$)|[!?])")
_LINK = re.compile(
    r"(!?)\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"  # ![label] or [label], one level of nested brackets
    r"\(\s*(<[^<>\n]*>|(?:[^()\s<>]|\([^()\s]*\))*)"  # (<url> or (url with balanced parentheses
    r"(?:\s+(?:\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|\((?:[^()\\\n]|\\.)*\)))?\s*\)"  # "title")
)
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*)>")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s.*)?$", re.MULTILINE)
_SAFE_SCHEMES = frozenset({"", "http", "https", "mailto"})


# Full-width punctuation is how Chinese text is written (，：；！？（）), not a variant of ASCII: NFKC would turn
# "开发者，他" into "开发者,他". It is kept; everything else is NFKC-normalised.
_FULLWIDTH_PUNCTUATION = re.compile(r"[\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff60]+")


def normalise_text(text: str) -> str:
    """NFKC, so what a converter extracted is searchable by what a reader types.

    PDFs often name CJK radicals (Kangxi block, U+2F00–U+2FD5) or compatibility ideographs for the common
    characters they look like: "审计⽇志" (U+2F47) must be "审计日志", or neither the lexical index nor a reader's
    query finds it. NFKC also undoes ligatures (ﬁ) and full-width letters and digits (Ａ１). It runs before
    clean_markdown, so a character NFKC turns into markup ("﹤" into "<") is made inert like any other.
    """
    parts, position = [], 0
    for kept in _FULLWIDTH_PUNCTUATION.finditer(text):
        parts.append(unicodedata.normalize("NFKC", text[position : kept.start()]))
        parts.append(kept.group(0))
        position = kept.end()
    parts.append(unicodedata.normalize("NFKC", text[position:]))
    return "".join(parts)


def clean_markdown(markdown: str) -> str:
    """Normalised, inert Markdown: no control characters, no raw HTML, no links but http(s)/mailto/relative.

    MarkItDown drops <script> and <style> from HTML, but text like "&lt;script&gt;" comes out as a live tag,
    image sources keep javascript: and file: URLs pass. Raw tags are backslash-escaped (a Markdown renderer
    shows them as text); code blocks and code spans are left alone because renderers never run them.
    """
    markdown = markdown.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n\n")  # \f: PDF page break
    markdown = clean_text(markdown)  # what check_text refuses in a memory
    markdown = _HTML_COMMENT.sub("", markdown)
    lines, fence = [], None
    for line in markdown.split("\n"):
        opening = _FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            lines.append(line.rstrip())
            continue
        if opening:
            fence = opening.group(1)
            lines.append(line.rstrip())
            continue
        lines.append(_inert_line(line.rstrip()))
    markdown = _REFERENCE.sub(lambda m: m.group(0) if _safe_url(m.group(1)) else "", "\n".join(lines))
    return re.sub(r"\n{3,}", "\n\n", markdown).strip()


def _inert_line(line: str) -> str:
    parts, position = [], 0
    for code in _INLINE_CODE.finditer(line):
        parts.append(_inert_text(line[position : code.start()]))
        parts.append(code.group(0))
        position = code.end()
    parts.append(_inert_text(line[position:]))
    return "".join(parts)


def _inert_text(text: str) -> str:
    text = _LINK.sub(_safe_link, text)
    text = _AUTOLINK.sub(lambda m: m.group(0) if _safe_url(m.group(1)) else m.group(1), text)
    return _TAG_OPEN.sub(r"\1\\<", text)


def _safe_link(match: re.Match) -> str:
    image, label, url = match.groups()
    url = url.removeprefix("<").removesuffix(">")
    if _safe_url(url) and " " not in url:
        return f"{image}[{label}]({url})"  # titles dropped: they are not content, and they can carry markup
    return label


def _safe_url(url: str) -> bool:
    compact = re.sub(r"[\x00-\x20]", "", url)
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", compact)
    return (scheme.group(1).lower() if scheme else "") in _SAFE_SCHEMES


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def _first_heading(markdown: str) -> str:
    fence = None
    for line in markdown.split("\n"):
        opening = _FENCE.match(line)
        if opening and (fence is None or opening.group(1)[0] == fence[0]):
            fence = None if fence else opening.group(1)
        elif fence is None and (match := re.match(r" {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", line)):
            return _one_line(match.group(1).replace("*", ""))
    return ""
