"""A made-up file format for tests/test_formats.py: TSVX, tab-separated rows behind a binary signature.

Its own module with no Django in it, because a conversion runs in a child of the fork server
(knowledge.pipeline.bounded), which imports this record's functions by name.
"""

from knowledge.pipeline.converters import Extracted, Source
from knowledge.pipeline.formats import Format

MAGIC = b"\x00TSVX\x01\n"


def is_tsvx(head: bytes) -> bool:
    return head.startswith(MAGIC)


def convert_tsvx(source: Source) -> Extracted:
    """The rows as a Markdown table under a heading named after the file."""
    lines = source.path.read_bytes().removeprefix(MAGIC).decode("utf-8").splitlines()
    header, *rows = [line.split("\t") for line in lines if line.strip()]
    table = [f"| {' | '.join(header)} |", f"|{' --- |' * len(header)}"]
    table += [f"| {' | '.join(row)} |" for row in rows]
    return Extracted(f"# {source.name}\n\n" + "\n".join(table), title=f"Table {source.name}")


TSVX = Format(
    "tsvx",
    ("tsvx",),
    ("application/x-tsvx",),
    "a TSVX table",
    "This TSVX table is damaged",
    convert_tsvx,
    "binary",
    magic=is_tsvx,
)


def tsvx_bytes(*rows: tuple[str, ...]) -> bytes:
    return MAGIC + "\n".join("\t".join(row) for row in rows).encode("utf-8")
