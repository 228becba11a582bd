"""Where converted text comes from: PDF pages and workbook sheets, through conversion and chunking; images whose
only text is their metadata give nothing to index."""

from types import SimpleNamespace

import pytest

from knowledge.pipeline import Part, chunk_paragraphs, convert_to_markdown, split_paragraphs
from knowledge.pipeline.locations import workbook_sheets
from tests import fixtures_knowledge as fk

PAGES = [
    ["The lighthouse keeper logs the weather at dawn."],
    [
        "Ship | Arrival | Berth",
        "Corvina | 06:10 | North",
        "Albatross | 07:45 | South",
        "Petrel | 09:30 | East",
    ],
    [],  # an empty page still counts
    ["灯塔的航海日志在第四页结束。"],
]


def convert(path):
    return convert_to_markdown(path, filename=path.name)


def chunks_of(converted, chunk_size=800, chunk_overlap=0):
    paragraphs = [
        paragraph
        for part in converted.parts
        for paragraph in split_paragraphs(part.markdown, page=part.page, sheet=part.sheet)
    ]
    return chunk_paragraphs(paragraphs, chunk_size=chunk_size, chunk_overlap=chunk_overlap)


def test_a_pdf_is_converted_page_by_page_even_when_a_page_holds_a_table(tmp_path):
    # A table page sends MarkItDown's whole-document conversion down its pdfplumber path, which keeps no page
    # boundary: converted page by page, every part still knows its page.
    converted = convert(fk.make_paged_pdf(tmp_path, PAGES))
    assert [part.page for part in converted.parts] == [1, 2, 4]
    assert "lighthouse keeper" in converted.parts[0].markdown
    assert "| Corvina   | 06:10   | North |" in converted.parts[1].markdown  # MarkItDown's table, as before
    assert converted.parts[2].markdown == "灯塔的航海日志在第四页结束。"
    assert converted.markdown == "\n\n".join(part.markdown for part in converted.parts)


def test_each_pdf_chunk_names_the_pages_its_text_comes_from(tmp_path):
    converted = convert(fk.make_paged_pdf(tmp_path, PAGES))
    one = chunks_of(converted)
    assert [(chunk.page_start, chunk.page_end) for chunk in one] == [(1, 4)]  # one chunk spans them all
    small = chunks_of(converted, chunk_size=50)
    assert [(chunk.page_start, chunk.page_end) for chunk in small] == [(1, 2), (2, 4)]
    assert "lighthouse" in small[0].text and "Ship" in small[0].text and "灯塔" not in small[0].text
    assert "Petrel" in small[1].text and "灯塔" in small[1].text


def test_an_overlap_from_the_previous_page_is_cited_too():
    paragraphs = [
        *split_paragraphs("First page ends with a sentence about tides. " * 6, page=1),
        *split_paragraphs("Second page begins with harbour fees and pilot boats. " * 6, page=2),
    ]
    chunks = chunk_paragraphs(paragraphs, chunk_size=80, chunk_overlap=20)
    assert chunks[0].page_start == chunks[0].page_end == 1
    second = next(chunk for chunk in chunks if chunk.page_end == 2)
    assert "tides" in second.text and "harbour fees" in second.text  # it repeats the end of page 1
    assert second.page_start == 1


def test_a_workbook_gives_one_part_per_sheet_and_no_chunk_spans_two_sheets(tmp_path):
    path = fk.make_workbook(
        tmp_path,
        {
            "Tides": [["Harbour", "High water"], ["Porto", "04:12"]],
            "费用 2025": [["项目", "金额"], ["引航", 300]],
        },
    )
    converted = convert(path)
    assert [part.sheet for part in converted.parts] == ["Tides", "费用 2025"]
    assert converted.parts[0].markdown.startswith("## Tides\n")
    chunks = chunks_of(converted)
    assert [(chunk.sheet, chunk.heading_path) for chunk in chunks] == [
        ("Tides", "Tides"),
        ("费用 2025", "费用 2025"),
    ]
    assert "| 引航 | 300 |" in chunks[1].text and chunks[0].page_start is None


def test_workbook_sheets_keeps_text_before_the_first_sheet_without_a_sheet():
    assert workbook_sheets("no sheets here") == [Part("no sheets here")]
    assert workbook_sheets("intro\n\n## A\n| x |\n## B\n| y |") == [
        Part("intro\n\n"),
        Part("## A\n| x |\n", sheet="A"),
        Part("## B\n| y |", sheet="B"),
    ]


@pytest.mark.parametrize("kind", ["md", "docx", "html"])
def test_other_formats_are_one_part_from_nowhere_in_particular(tmp_path, kind):
    converted = convert(fk.MAKERS[kind](tmp_path))
    assert converted.parts == (Part(converted.markdown),)


def test_an_image_without_a_description_keeps_its_metadata_but_gives_nothing_to_index(tmp_path):
    converted = convert(fk.make_png(tmp_path))
    assert "Title: Architecture diagram" in converted.markdown  # shown on the document's page
    assert converted.parts == ()


def test_an_image_an_llm_described_is_indexed(tmp_path):
    answer = SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content="A tide chart."))])
    client = SimpleNamespace(
        chat=SimpleNamespace(completions=SimpleNamespace(create=lambda **kwargs: answer))
    )
    path = fk.make_png(tmp_path)
    converted = convert_to_markdown(path, filename=path.name, llm_client=client, llm_model="vision")
    assert len(converted.parts) == 1 and "A tide chart." in converted.parts[0].markdown
