"""File to Markdown for the knowledge base: check what a file really is, convert it offline, make it safe.

No Django here, so the upload view, the Celery task and a management command share one code path. The formats
and their converters are knowledge.pipeline.formats' records, told apart by knowledge.pipeline.sniff; this module
holds what every kind goes through: the name, the archive limits, the call of the kind's converter and the
clean-up of what it extracted. Every failure becomes a ConversionError whose message can be shown to the user as
it is; the traceback goes to the log.
"""

import re
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

from core.limits import clean_text
from core.stored_text import Text, gettext_noop
from knowledge.pipeline import formats
from knowledge.pipeline.converters import IMAGE_NOTICE, MAX_PDF_PAGES, Source, decode_text, one_line
from knowledge.pipeline.errors import ConversionError, error_reason
from knowledge.pipeline.formats import SUPPORTED
from knowledge.pipeline.locations import Part
from knowledge.pipeline.sniff import HEAD_BYTES, detect

__all__ = [  # the names other modules import from here
    "HEAD_BYTES",
    "IMAGE_NOTICE",
    "MAX_PDF_PAGES",
    "SUPPORTED",
    "ConversionError",
    "Converted",
    "clean_markdown",
    "convert_to_markdown",
    "decode_text",
    "detect_kind",
    "error_reason",
    "normalise_text",
    "safe_filename",
    "unpacked_sizes",
]

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
MAX_NAME_CHARS = 100
_MAX_NAME_BYTES = 240  # most filesystems allow 255 bytes per name; a Chinese character takes 3 in UTF-8


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


# --- Detection -----------------------------------------------------------------------------------------------------


def detect_kind(data_head: bytes, filename: str) -> str:
    """The kind of a file from its first bytes (HEAD_BYTES is enough) and its name; raises ConversionError.

    Binary formats are recognised by their signatures, ZIP-based ones by the names of their members. A file
    whose extension claims one binary type while its bytes are another (or are plain text) is refused with what
    it really is; text files are told apart by extension once the bytes decode as text.
    """
    return detect(data_head, safe_filename(filename), zip_names=None)


# --- Archive limits ------------------------------------------------------------------------------------------------


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
    kind = detect(head, name, zip_names)
    llm = {"llm_client": llm_client} if llm_client is not None else {}
    if llm_model is not None:
        llm["llm_model"] = llm_model
    fmt = formats.get(kind)
    extracted = fmt.convert(Source(path=path, name=name, format=fmt, llm=llm))
    markdown, parts = clean_markdown(normalise_text(extracted.markdown)), extracted.parts
    if parts is None:
        parts = [Part(markdown)]
    elif parts:  # each part cleaned on its own, and the whole text is theirs
        parts = [replace(part, markdown=clean_markdown(normalise_text(part.markdown))) for part in parts]
        parts = [part for part in parts if part.markdown]
        markdown = "\n\n".join(part.markdown for part in parts)
    if not re.search(r"\w", markdown):
        hint = Text(fmt.no_text_hint) if fmt.no_text_hint else ""
        raise ConversionError(
            Text(gettext_noop("No text could be extracted from %(name)s%(hint)s"), name=name, hint=hint)
        )
    title = normalise_text(one_line(extracted.title)) or _first_heading(markdown) or name.rsplit(".", 1)[0]
    return Converted(
        markdown=markdown, kind=kind, title=title[:200], notice=extracted.notice, parts=tuple(parts)
    )


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


def _first_heading(markdown: str) -> str:
    fence = None
    for line in markdown.split("\n"):
        opening = _FENCE.match(line)
        if opening and (fence is None or opening.group(1)[0] == fence[0]):
            fence = None if fence else opening.group(1)
        elif fence is None and (match := re.match(r" {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", line)):
            return one_line(match.group(1).replace("*", ""))
    return ""
