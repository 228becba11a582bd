"""What a file really is, from its first bytes and its name, by the rules of the registered formats.

The type is decided from the bytes, not trusted from the name: an upload whose extension lies about its binary
type is refused with what it really is, and each kind goes to exactly one converter, so a damaged .docx can never
fall through to a ZIP or plain-text reader and be indexed as XML soup.
"""

import codecs
import re

from core.stored_text import Text, gettext_noop
from knowledge.pipeline import formats
from knowledge.pipeline.errors import ConversionError

HEAD_BYTES = 64 * 1024  # how much of a file detect_kind needs to see
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")

# What the bytes may be besides a supported format, as messages name it.
_OTHER = {
    "zip": gettext_noop("a ZIP archive"),
    "ole": gettext_noop("an Office 97-2003 file or a password-protected Office file"),
    "exe": gettext_noop("a program"),
    "archive": gettext_noop("a compressed archive"),
    "text": gettext_noop("plain text"),
    "binary": gettext_noop("binary data of an unknown type"),
}


def extension_of(filename: str) -> str:
    stem, dot, extension = filename.rpartition(".")
    return extension.lower() if dot and stem else ""


def described(kind: str) -> str:
    """How a message names what the bytes are: "a PDF", "a ZIP archive"."""
    return _OTHER[kind] if kind in _OTHER else formats.get(kind).description


def detect(head: bytes, name: str, zip_names: list[str] | None) -> str:
    """The kind of a file from its first bytes and its (safe) name; raises ConversionError.

    `zip_names`: an archive's member names when the whole file was read, else None (judged by the head).
    """
    if not head:
        raise ConversionError(Text(gettext_noop("The file is empty")))
    extension = extension_of(name)
    by_extension = formats.kind_by_extension()
    claimed = by_extension.get(extension)
    if extension and claimed is None:
        raise ConversionError(
            Text(
                gettext_noop("Unsupported file type .%(extension)s: supported are %(supported)s"),
                extension=extension,
                supported=", ".join(by_extension),
            )
        )
    claim = formats.get(claimed) if claimed is not None else None
    real = sniff(head, zip_names)
    if real == "zip-partial":  # benefit of the doubt; convert_to_markdown lists the whole archive
        real = claim.name if claim is not None and claim.family == "zip" else "zip"
    if claim is None:  # no extension: trust the content when it is something we read
        if real == "text":
            return "txt"
        if real in by_extension.values():
            return real
        raise ConversionError(
            Text(
                gettext_noop("%(name)s has no extension and is %(what)s, which is not supported"),
                name=name,
                what=Text(described(real)),
            )
        )
    if real == claimed or (claim.family == "image" and _family(real) == "image"):
        return real  # a .png that is really a JPEG is still an image we read the same way
    if claim.family == "text" and real == "text":
        return claim.name
    if real == "binary" and claim.wrong_start:
        raise ConversionError(
            Text(
                gettext_noop("%(damaged)s: %(name)s %(wrong_start)s"),
                damaged=Text(claim.damaged),
                name=name,
                wrong_start=Text(claim.wrong_start),
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
            what=Text(described(real)),
            advice=advice,
        )
    )


def _family(kind: str) -> str | None:
    return None if kind in _OTHER or kind == "zip-partial" else formats.get(kind).family


def sniff(head: bytes, zip_names: list[str] | None) -> str:
    """A registered kind, or what else the bytes are (_OTHER), or "zip-partial" for an archive whose head
    alone cannot tell."""
    known = formats.formats()
    for fmt in known:
        if fmt.magic is not None and fmt.magic(head):
            return fmt.name
    if head[:4] in ZIP_MAGIC:
        names = zip_names if zip_names is not None else zip_names_in_head(head)
        kind = next(
            (f.name for f in known if f.zip_members is not None and f.zip_members(head, names)), "zip"
        )
        if kind == "zip" and zip_names is None and b"PK\x05\x06" not in head:
            return "zip-partial"  # the members that tell docx from zip may come after the head
        return kind
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return "ole"
    if head[:2] == b"MZ" or head[:4] in (b"\x7fELF", b"\xca\xfe\xba\xbe", b"\xcf\xfa\xed\xfe"):
        return "exe"
    if head[:2] == b"\x1f\x8b" or head[:6] == b"7z\xbc\xaf\x27\x1c" or head[:4] == b"Rar!":
        return "archive"
    if looks_like_text(head):
        return "text"
    return next((f.name for f in known if f.loose_magic is not None and f.loose_magic(head)), "binary")


def zip_names_in_head(head: bytes) -> list[str]:
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


_TEXT_CONTROLS = frozenset("\t\n\r\f\v\x1b")


def looks_like_text(head: bytes) -> bool:
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
