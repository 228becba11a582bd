"""Real sample files of every format the knowledge pipeline accepts, written into a test's tmp_path.

Each maker writes one file and returns its path. The texts below are what the conversion tests look for, so a
format that loses its Chinese or its headings fails loudly. Office files come from the same libraries people
use to write them (python-docx, openpyxl, python-pptx), the PDF from reportlab with its built-in CID font
STSong-Light (no font file needed), the EPUB is zipped by hand as the spec lays it out.
"""

import functools
import json
import zipfile
import zlib
from pathlib import Path

ENGLISH = "Mnemo keeps memories for agents and answers questions from documents."
CHINESE = "用户张三是一名Python开发者，他喜欢在周末整理知识库。"


def make_docx(folder: Path, name: str = "guide.docx") -> Path:
    from docx import Document

    document = Document()
    document.core_properties.title = "Installation Guide"
    document.add_heading("Installation Guide", level=1)
    document.add_paragraph(ENGLISH)
    document.add_heading("Linux", level=2)
    document.add_paragraph(CHINESE)
    table = document.add_table(rows=2, cols=2)
    for row, cells in zip(
        table.rows, [("System", "Command"), ("Debian", "apt-get install mnemo")], strict=True
    ):
        for cell, text in zip(row.cells, cells, strict=True):
            cell.text = text
    path = folder / name
    document.save(path)
    return path


def make_xlsx(folder: Path, name: str = "sales.xlsx") -> Path:
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Sales"
    sheet.append(["Region", "Revenue"])
    sheet.append(["华东地区", 1200])
    sheet.append(["Northwest", 800])
    path = folder / name
    workbook.save(path)
    return path


def make_pptx(folder: Path, name: str = "deck.pptx") -> Path:
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
    slide.shapes.title.text = "Quarterly Review"
    slide.placeholders[1].text_frame.text = "知识库检索的准确率提升了百分之二十"
    path = folder / name
    deck.save(path)
    return path


def make_pdf(folder: Path, name: str = "report.pdf", lines: list[str] | None = None) -> Path:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    path = folder / name
    page = canvas.Canvas(str(path), pagesize=A4)
    page.setTitle("Annual Report")
    y = 780
    for line in lines or ["Annual Report", ENGLISH, CHINESE]:
        page.setFont("STSong-Light" if any(ord(char) > 0x2E80 for char in line) else "Helvetica", 12)
        page.drawString(72, y, line)
        y -= 24
    page.save()
    return path


# What some PDF producers write for common characters: CJK radicals (Kangxi block) that look the same.
KANGXI_LOOKALIKES = {"\u2f47": "日", "\u2f49": "月", "\u2faf": "面", "\u2f1d": "口"}
# Reads 审计日志记录了每一次变更：月度报告、面向用户的接口。
KANGXI_LINE = "审计\u2f47志记录了每一次变更：\u2f49度报告、\u2faf向用户的接\u2f1d。"


def make_kangxi_pdf(folder: Path, name: str = "audit.pdf") -> Path:
    """A PDF whose extracted text holds Kangxi radicals (U+2F47 ⽇, U+2F49 ⽉, U+2FAF ⾯, U+2F1D ⼝) for 日月面口.

    Drawing U+2F47 with STSong-Light alone is not enough: the reader maps the glyph back through Adobe-GB1 and
    gets 日. Real files carry a ToUnicode CMap that names the radical instead, so this font writes one: every CID
    on the page maps to the character that was drawn. pdfminer (under MarkItDown) looks ToUnicode up by CID.
    """
    from pdfminer.cmapdb import CMapDB
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfbase.pdfdoc import PDFStream
    from reportlab.pdfgen import canvas

    encoding = CMapDB.get_cmap("UniGB-UCS2-H")
    lines = ["Audit Log", KANGXI_LINE]
    to_unicode = {}
    for char in {char for line in lines for char in line if ord(char) > 0x2E80}:
        (cid,) = encoding.decode(char.encode("utf-16-be"))
        to_unicode[cid] = char
    entries = "\n".join(f"<{cid:04X}> <{ord(char):04X}>" for cid, char in sorted(to_unicode.items()))
    cmap = (
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
        "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n"
        "1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n"
        f"{len(to_unicode)} beginbfchar\n{entries}\nendbfchar\n"
        "endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n"
    )

    class LookalikeFont(UnicodeCIDFont):
        def addObjects(self, doc):
            super().addObjects(doc)
            font = doc.idToObject[doc.fontMapping[self.name][1:]]
            font.dict["ToUnicode"] = doc.Reference(PDFStream(content=cmap.encode()))

    font = LookalikeFont("STSong-Light")
    font.name = font.fontName = "STSong-Light-Lookalikes"  # its own name: the plain font stays unchanged
    pdfmetrics.registerFont(font)
    path = folder / name
    page = canvas.Canvas(str(path), pagesize=A4)
    page.setTitle("Audit Log")
    page.setFont("Helvetica", 12)
    page.drawString(72, 780, lines[0])
    page.setFont(font.name, 12)
    page.drawString(72, 756, lines[1])
    page.save()
    return path


def make_long_pdf(folder: Path, pages: int, lines_per_page: int = 1, name: str = "long.pdf") -> Path:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    path = folder / name
    document = canvas.Canvas(str(path), pagesize=A4)
    for number in range(pages):
        for line in range(lines_per_page):
            document.drawString(
                40, 800 - line * 18, f"Page {number} line {line}: the audit log kept every change."
            )
        document.showPage()
    document.save()
    return path


def make_paged_pdf(folder: Path, pages: list[list[str]], name: str = "paged.pdf") -> Path:
    """A PDF with the given lines on each page; a page of lines holding " | " is drawn as a table of columns."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    path = folder / name
    document = canvas.Canvas(str(path), pagesize=A4)
    for lines in pages:
        for number, line in enumerate(lines):
            for column, cell in enumerate(line.split(" | ")):
                chinese = any(ord(char) > 0x2E80 for char in cell)
                document.setFont("STSong-Light" if chinese else "Helvetica", 12)
                document.drawString(72 + column * 150, 780 - number * 20, cell)
        document.showPage()
    document.save()
    return path


def make_workbook(folder: Path, sheets: dict[str, list[list]], name: str = "book.xlsx") -> Path:
    from openpyxl import Workbook

    workbook = Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets.items():
        sheet = workbook.create_sheet(title)
        for row in rows:
            sheet.append(row)
    path = folder / name
    workbook.save(path)
    return path


def make_pdf_bomb(folder: Path, unpacked_mb: int, name: str = "bomb.pdf") -> Path:
    """A valid one-page PDF whose content stream is a few hundred KB on disk and ``unpacked_mb`` once inflated."""
    path = folder / name
    path.write_bytes(_pdf_bomb(unpacked_mb))
    return path


@functools.cache  # compressing the hundreds of MB takes seconds: once per process
def _pdf_bomb(unpacked_mb: int) -> bytes:
    stream = zlib.compress(b"0 0 m " * (unpacked_mb * 2**20 // 6), 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    data = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(data))
        data += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(data)
    data += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    data += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    data += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(data)


HOSTILE_HTML = """<!DOCTYPE html>
<html><head><title>Release Notes</title>
<script>alert(1)</script>
<style>body { color: red }</style>
</head>
<body onload="steal()">
<h1>Release Notes</h1>
<p onclick="evil()">Version two adds hybrid search. 新版本支持混合检索。</p>
<p><a href="javascript:alert(2)">click me</a> and <a href="https://example.org/docs">the docs</a></p>
<img src="x.png" onerror="alert(3)" alt="diagram">
<script type="text/javascript">document.write("injected")</script>
<iframe src="https://evil.example/frame"></iframe>
</body></html>
"""


def make_html(folder: Path, name: str = "notes.html", html: str = HOSTILE_HTML) -> Path:
    path = folder / name
    path.write_text(html, encoding="utf-8")
    return path


def make_csv(folder: Path, name: str = "people.csv") -> Path:
    path = folder / name
    path.write_text("name,city\n张三,北京\nAlice,London\n", encoding="utf-8")
    return path


def make_json(folder: Path, name: str = "config.json") -> Path:
    path = folder / name
    path.write_text(
        json.dumps({"project": "Mnemo", "描述": "记忆控制台", "tags": ["rag", "memory"]}), encoding="utf-8"
    )
    return path


def make_epub(folder: Path, name: str = "book.epub") -> Path:
    container = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""
    opf = """<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">urn:uuid:0b3c1e58-0000-4000-8000-000000000001</dc:identifier>
    <dc:title>The Memory Book</dc:title><dc:language>zh</dc:language><dc:creator>Mnemo</dc:creator>
  </metadata>
  <manifest><item id="ch1" href="chapter1.xhtml" media-type="application/xhtml+xml"/></manifest>
  <spine><itemref idref="ch1"/></spine>
</package>"""
    chapter = f"""<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Chapter One</title></head>
<body><h1>Chapter One</h1><p>{ENGLISH}</p><p>{CHINESE}</p></body></html>"""
    path = folder / name
    with zipfile.ZipFile(path, "w") as archive:
        # The mimetype entry must come first and be stored uncompressed (EPUB OCF spec).
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", container, compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("OEBPS/content.opf", opf, compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("OEBPS/chapter1.xhtml", chapter, compress_type=zipfile.ZIP_DEFLATED)
    return path


def make_txt(folder: Path, name: str = "notes.txt", encoding: str = "utf-8") -> Path:
    path = folder / name
    path.write_bytes(f"{ENGLISH}\n\n{CHINESE}\n".encode(encoding))
    return path


MARKDOWN = f"""# Guide

Intro paragraph.

## Install

### Linux

{ENGLISH}

```bash
# not a heading

apt-get install mnemo
```

## 使用

{CHINESE}
"""


def make_md(folder: Path, name: str = "guide.md") -> Path:
    path = folder / name
    path.write_text(MARKDOWN, encoding="utf-8")
    return path


def make_png(folder: Path, name: str = "diagram.png") -> Path:
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Title", "Architecture diagram")
    info.add_itxt("Description", "向量库与图数据库的架构图", lang="zh")
    path = folder / name
    Image.new("RGB", (200, 60), "white").save(path, pnginfo=info)
    return path


MAKERS = {
    "docx": make_docx,
    "xlsx": make_xlsx,
    "pptx": make_pptx,
    "pdf": make_pdf,
    "html": make_html,
    "csv": make_csv,
    "json": make_json,
    "epub": make_epub,
    "txt": make_txt,
    "md": make_md,
    "png": make_png,
}


def make_wordy_docx(folder: Path, xml_mb: float, name: str = "wordy.docx", parts: int = 1) -> Path:
    """A small .docx whose XML unpacks to about `xml_mb` MB (one paragraph repeated: it compresses ~1,000×),
    spread over `parts` XML members (the body, then footnotes-like parts) when asked."""
    base = make_docx(folder, f"base-{name}")
    with zipfile.ZipFile(base) as archive:
        members = {member: archive.read(member) for member in archive.namelist()}
    paragraph = "<w:p><w:r><w:t>The harbour log records the wind, the tide and every ship.</w:t></w:r></w:p>"
    repeats = int(xml_mb * 2**20 / len(paragraph) / parts)
    body = members["word/document.xml"].decode()
    end = body.index("<w:sectPr") if "<w:sectPr" in body else body.index("</w:body>")
    members["word/document.xml"] = (body[:end] + paragraph * repeats + body[end:]).encode()
    for part in range(1, parts):
        members[f"word/extra{part}.xml"] = (paragraph * repeats).encode()
    path = folder / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


def make_png_bomb(folder: Path, megapixels: int, name: str = "poster.png") -> Path:
    """A one-bit PNG of `megapixels` million pixels: some KB on disk, gigabytes once decoded."""
    from PIL import Image

    side = int((megapixels * 1_000_000) ** 0.5)
    path = folder / name
    Image.new("1", (side, side)).save(path, optimize=True)
    return path
