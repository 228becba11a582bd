"""The converters of the file formats (knowledge.pipeline.formats names which one reads which kind).

Each takes a Source (the stored file, the user's name for it, its checked Format, the LLM options) and returns
what it extracted; convert_to_markdown cleans the result the same way for every kind. Nothing calls the network:
MarkItDown's converters run locally, and only a caller that passes an LLM client gets image descriptions.
"""

from __future__ import annotations

import codecs
import io
import json
import logging
import os
import re
import shutil
import warnings
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from core.stored_text import Text, gettext_noop
from knowledge.pipeline.errors import ConversionError, cause, error_reason
from knowledge.pipeline.locations import Part, pdf_pages, workbook_sheets

logger = logging.getLogger(__name__)

# pdfplumber reads about six pages a second here: a thousand pages is three minutes of a worker.
MAX_PDF_PAGES = 1_000
DESCRIPTION = "# Description:"  # how MarkItDown introduces an LLM's description of an image
IMAGE_NOTICE = Text(
    gettext_noop(
        "Only the image's metadata (size, format and embedded tags) was extracted: the picture itself is not read "
        "and there is no OCR. Configure an LLM to get a description of images."
    )
)


class Described(Protocol):
    """What a converter reads of its file's Format (knowledge.pipeline.formats, which imports the converters)."""

    @property
    def name(self) -> str: ...
    @property
    def mime_types(self) -> tuple[str, ...]: ...
    @property
    def description(self) -> str: ...
    @property
    def damaged(self) -> str: ...
    @property
    def family(self) -> str: ...


@dataclass(frozen=True)
class Source:
    """A stored upload whose kind is checked: `name` is the safe name the user gave it."""

    path: Path
    name: str
    format: Described
    llm: dict[str, Any] = field(default_factory=dict)  # llm_client and llm_model, when the caller gave them

    @property
    def kind(self) -> str:
        return self.format.name


@dataclass(frozen=True)
class Extracted:
    markdown: str
    title: str = ""
    notice: str = ""
    # None: the whole text, from nowhere in particular; else the text by page or sheet (knowledge.pipeline.locations),
    # or no part at all for an image whose only text is its metadata.
    parts: list[Part] | None = None


def markitdown(data: Path | bytes, source: Source, options: dict, *, converter=None) -> tuple[str, str]:
    """Convert with MarkItDown, told the kind we checked; bytes of a text kind are UTF-8 text we already decoded.
    ``converter``: that MarkItDown converter directly, without MarkItDown's guess at the file's type."""
    from markitdown import MissingDependencyException, StreamInfo

    kind, name, what = source.kind, source.name, source.format
    info = StreamInfo(extension=f".{kind}", mimetype=what.mime_types[0], filename=name)
    if isinstance(data, bytes) and what.family == "text":
        info = info.copy_and_update(charset="utf-8")
    try:
        with io.BytesIO(data) if isinstance(data, bytes) else data.open("rb") as stream:
            if converter is not None:
                result = converter.convert(stream, info, **options)
            else:
                result = _converter().convert_stream(stream, stream_info=info, **options)
    except MissingDependencyException as exc:
        raise ConversionError(
            Text(
                gettext_noop("Reading %(what)s is not installed on this server"), what=Text(what.description)
            )
        ) from exc
    except Exception as exc:
        logger.info("converting %s (%s) failed", name, kind, exc_info=True)
        if isinstance(cause(exc), MemoryError):
            raise ConversionError(
                Text(gettext_noop("%(name)s needs more memory to convert than allowed"), name=name),
                out_of_memory=True,
            ) from exc
        prefix = (
            Text(what.damaged)
            if what.damaged
            else Text(gettext_noop("%(name)s could not be converted"), name=name)
        )
        raise ConversionError(
            Text(gettext_noop("%(prefix)s: %(reason)s"), prefix=prefix, reason=error_reason(exc))
        ) from exc
    return result.markdown or "", result.title or ""


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


# --- Office files and e-books ----------------------------------------------------------------------------------


def convert_document(source: Source) -> Extracted:
    """A .docx or an EPUB, whole."""
    markdown, title = markitdown(source.path, source, source.llm)
    return Extracted(markdown, title)


def convert_presentation(source: Source) -> Extracted:
    markdown, title = markitdown(source.path, source, source.llm)
    return Extracted(re.sub(r"<!-- Slide number: \d+ -->\n?", "", markdown), title)


def convert_workbook(source: Source) -> Extracted:
    """A workbook sheet by sheet (MarkItDown's `## <sheet>` headings), so each chunk knows its sheet."""
    markdown, title = markitdown(source.path, source, source.llm)
    return Extracted(markdown, title, parts=workbook_sheets(markdown))


# --- PDF -----------------------------------------------------------------------------------------------------------


def convert_pdf(source: Source) -> Extracted:
    """A PDF page by page (knowledge.pipeline.locations), so each chunk knows its page; a file pypdfium2 cannot
    split is converted whole, and MarkItDown says what is wrong with it."""
    from markitdown.converters import PdfConverter
    from pypdfium2 import PdfiumError

    _check_pdf_pages(source.path, source.name)
    converter = PdfConverter()
    try:
        parts = [
            Part(markitdown(data, source, {}, converter=converter)[0], page=number)
            for number, data in pdf_pages(source.path)
        ]
        title = ""
    except PdfiumError:
        markdown, title = markitdown(source.path, source, {})
        parts = [Part(markdown)]
    return Extracted("\n\n".join(part.markdown for part in parts), title, parts=parts)


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


# --- Text ----------------------------------------------------------------------------------------------------------


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


def _read_text(source: Source) -> tuple[str, str]:
    """The file's text and the notice saying which encoding read it, when not UTF-8."""
    text, encoding = decode_text(source.path.read_bytes())
    return text, _read_as(encoding)


def convert_plain(source: Source) -> Extracted:
    """Plain text and Markdown, as they are."""
    text, notice = _read_text(source)
    return Extracted(text, "", notice)


def _read_as(encoding: str) -> str:
    """The notice for text read in another encoding than UTF-8 ("" for UTF-8)."""
    if encoding in ("utf-8", "ascii"):
        return ""
    return Text(gettext_noop("The text was read as %(encoding)s."), encoding=encoding.upper())


def convert_json(source: Source) -> Extracted:
    text, notice = _read_text(source)
    try:
        pretty = json.dumps(json.loads(text), ensure_ascii=False, indent=2)
    except ValueError as exc:
        return Extracted(
            _fence(text, "json"),
            "",
            Text(
                gettext_noop("This is not valid JSON (%(error)s); its text was kept as it is."),
                error=str(exc),
            ),
        )
    return Extracted(_fence(pretty, "json"), "", notice)


def convert_csv(source: Source) -> Extracted:
    text, notice = _read_text(source)
    markdown, title = markitdown(text.encode("utf-8"), source, {})
    return Extracted(markdown, title, notice)


def convert_html(source: Source) -> Extracted:
    data = source.path.read_bytes()
    declared = re.search(rb"""<meta[^>]+charset=["']?([\w-]+)""", data[:4096], re.IGNORECASE)
    text, encoding = _decode_html(data, declared.group(1).decode("ascii") if declared else None)
    notice = _read_as(encoding)
    markdown, title = markitdown(text.encode("utf-8"), source, {})
    return Extracted(markdown, title, notice)


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


# --- Images --------------------------------------------------------------------------------------------------------


def convert_image(source: Source) -> Extracted:
    """Metadata (exiftool when installed, else Pillow) and, only with an LLM, a description of the picture."""
    metadata, title = _image_metadata(source)  # also proves the image opens
    options = dict(source.llm)
    if exiftool := _exiftool_path():
        options["exiftool_path"] = exiftool
    markdown = ""
    if options:
        try:
            markdown, _ = markitdown(source.path, source, options)
        except ConversionError:
            markdown = ""  # exiftool or the LLM failed: Pillow's metadata still describes the file
    if not exiftool or not markdown.split(DESCRIPTION)[0].strip():
        markdown = f"{metadata}\n\n{markdown}"
    if DESCRIPTION in markdown:
        return Extracted(
            markdown,
            title,
            Text(gettext_noop("The image was described by the configured LLM; no OCR was run.")),
        )
    # Without a description the only text is the metadata, shown but not indexed: it is not the picture's content.
    return Extracted(markdown, title, IMAGE_NOTICE, parts=[])


@cache
def _exiftool_path() -> str | None:
    """exiftool when installed in a system folder (MarkItDown's rule: never one found in a writable PATH entry)."""
    found = shutil.which("exiftool")
    if found and os.path.dirname(os.path.abspath(found)) in ("/usr/bin", "/usr/local/bin", "/opt/bin"):
        return found
    return None


_EXIF_TEXT = {0x010E: "Description", 0x013B: "Artist", 0x8298: "Copyright", 0x0132: "DateTime"}
_EXIF_XP = {0x9C9B: "Title", 0x9C9C: "Comment", 0x9C9D: "Author", 0x9C9E: "Keywords", 0x9C9F: "Subject"}


def _image_metadata(source: Source) -> tuple[str, str]:
    from PIL import Image, UnidentifiedImageError

    path, kind, name = source.path, source.kind, source.name
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
                        fields[str(key).title()] = one_line(value)[:500]
                exif = image.getexif()
                for tag, label in _EXIF_TEXT.items():
                    if isinstance(exif.get(tag), str) and exif[tag].strip():
                        fields[label] = one_line(exif[tag])[:500]
                for tag, label in _EXIF_XP.items():  # Windows "XP" tags are UTF-16LE bytes
                    if isinstance(exif.get(tag), bytes):
                        text = exif[tag].decode("utf-16-le", errors="ignore").rstrip("\x00")
                        fields[label] = one_line(text)
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
                gettext_noop("%(damaged)s: %(name)s could not be opened (%(reason)s)"),
                damaged=Text(source.format.damaged),
                name=name,
                reason=error_reason(exc),
            )
        ) from exc
    lines = [f"{key}: {value}" for key, value in fields.items() if value]
    return "\n".join(lines), fields.get("Title", "")


def one_line(text: str | None) -> str:
    return " ".join((text or "").split())
