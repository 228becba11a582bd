"""Where each part of a converted document comes from, so a citation can name it: a PDF's page, a workbook's sheet.

MarkItDown converts a PDF as one text. Its pdfminer path separates pages with form feeds, but as soon as one page
looks like a form or a table it takes its pdfplumber path, which joins the pages' texts with blank lines and drops
the empty ones: no page boundary survives. So a PDF is converted page by page: pypdfium2 (pdfplumber's own PDF
engine) copies each page into a one-page PDF, which MarkItDown's PdfConverter converts on its own (measured here:
about the time of the whole-document conversion; MarkItDown's front door would add a file-type guess per page).

A workbook needs nothing more: MarkItDown writes each sheet as a "## <sheet name>" heading over its table.
"""

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Part:
    """Text of a document with where it came from: ``page`` (1-based) of a PDF, or ``sheet`` of a workbook."""

    markdown: str
    page: int | None = None
    sheet: str = ""


def pdf_pages(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """Each page of the PDF as a PDF of its own, with its 1-based number; raises pypdfium2.PdfiumError for a file
    pypdfium2 cannot open (damaged, encrypted)."""
    import pypdfium2

    source = pypdfium2.PdfDocument(path)
    try:
        for index in range(len(source)):
            single = pypdfium2.PdfDocument.new()
            try:
                single.import_pages(source, [index])
                buffer = io.BytesIO()
                single.save(buffer)
            finally:
                single.close()
            yield index + 1, buffer.getvalue()
    finally:
        source.close()


# MarkItDown's XlsxConverter writes f"## {sheet_name}\n" before each sheet's table; a cell never starts a line
# with "## " (table rows start with "|").
_SHEET_HEADING = re.compile(r"^## (.*)$", re.MULTILINE)


def workbook_sheets(markdown: str) -> list[Part]:
    """MarkItDown's Markdown of a workbook as one part per sheet, each keeping its heading (its heading path)."""
    headings = list(_SHEET_HEADING.finditer(markdown))
    if not headings:
        return [Part(markdown)]
    parts = []
    if markdown[: headings[0].start()].strip():
        parts.append(Part(markdown[: headings[0].start()]))
    for heading, following in zip(headings, [*headings[1:], None], strict=True):
        end = following.start() if following else len(markdown)
        parts.append(Part(markdown[heading.start() : end], sheet=heading.group(1).strip()[:100]))
    return parts
