"""Markdown to heading-aware paragraphs to token-bounded chunks with overlap; pure functions, no Django.

Token counts come from core.text.count_tokens (the offline WordPiece tokenizer: about one token per Chinese
character). Each text is counted once per call through a small cache, and the count stored on a chunk is that
of its final text, so ``token_count <= chunk_size`` holds for the text that is embedded.

Why this terminates (the original chunker looped forever on a short paragraph followed by one of more than
chunk_size - overlap tokens): paragraphs are first cut into units of at most chunk_size tokens, and every
iteration of the packing loop emits one chunk that contains at least one new unit, so the loop runs at most
once per unit. The overlap is a prefix copied from the previous chunk and is shrunk, down to nothing, until the
first new unit fits; it is never a reason to emit a chunk.

Chunks stay within one section (one heading path), so a chunk's heading_path describes all of its text; the
overlap therefore also comes only from the same section. A sheet of a workbook is a section of its own too. Pages
are not sections: a chunk may run from the end of one PDF page onto the next, and then says both.
"""

import re
from dataclasses import dataclass

from knowledge.pipeline.cuts import (
    SENTENCE_END,
    TokenCounter,
    closes_fence,
    cut,
    fence_marker,
    hard_split,
    segments,
    split_blocks,
    wrapped_pieces,
)

MIN_CHUNK_SIZE = 50
# WordPiece maps a "word" over 100 characters to a single [UNK] token, so a base64 blob or a long URL counts as
# one token. Bounding characters per token keeps such text from producing megabyte chunks; ordinary prose
# averages 3-5 characters per token and code a little less, so this bound never bites on them.
MAX_CHARS_PER_TOKEN = 8
MAX_HEADING_PATH = 500  # knowledge.Chunk.heading_path
_MAX_HEADING_TITLE = 120


@dataclass(frozen=True)
class Paragraph:
    text: str
    heading_path: str
    page: int | None = None  # the PDF page it is on (knowledge.pipeline.locations)
    sheet: str = ""  # the workbook sheet it is in


@dataclass(frozen=True)
class ChunkSpec:
    text: str
    heading_path: str
    token_count: int
    ordinal: int
    page_start: int | None = None  # the first and last PDF page its text (overlap included) comes from
    page_end: int | None = None
    sheet: str = ""


# --- Paragraphs ----------------------------------------------------------------------------------------------------

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_LINK_TEXT = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
# CommonMark backslash escapes (MarkItDown writes "\<tag\>", "snake\_case"): a heading path is plain text.
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def split_paragraphs(markdown: str, *, page: int | None = None, sheet: str = "") -> list[Paragraph]:
    """Blank-line separated blocks with the path of the headings above them ("Guide > Install > Linux"), each
    marked with the ``page`` or ``sheet`` the Markdown came from.

    ATX headings (and setext headings under a single line) move the heading stack and are not paragraphs
    themselves. A fenced code block is one block even when it holds blank lines or lines starting with "#";
    a fence left open runs to the end of the document, as CommonMark says.
    """
    paragraphs: list[Paragraph] = []
    stack: list[tuple[int, str]] = []
    block: list[str] = []
    fence = ""

    def path() -> str:
        return _heading_path([title for _, title in stack])

    def flush() -> None:
        text = "\n".join(block).strip("\n")
        if text.strip():
            paragraphs.append(Paragraph(text=text, heading_path=path(), page=page, sheet=sheet))
        block.clear()

    def push(level: int, title: str) -> None:
        stack[:] = [entry for entry in stack if entry[0] < level]
        if title:
            stack.append((level, title))

    for line in markdown.splitlines():
        if fence:
            block.append(line)
            if closes_fence(line, fence):
                fence = ""
            continue
        fence = fence_marker(line)
        if fence:
            block.append(line)
            continue
        heading = _ATX.match(line)
        if heading:
            flush()
            push(len(heading.group(1)), _heading_title(heading.group(2) or ""))
            continue
        setext = _SETEXT.match(line)
        if setext and len(block) == 1 and not block[0].lstrip().startswith(("|", "-", "*", "+", ">")):
            title = _heading_title(block[0])
            block.clear()
            push(1 if setext.group(1)[0] == "=" else 2, title)
            continue
        if not line.strip():
            flush()
            continue
        block.append(line)
    flush()
    return paragraphs


def _heading_title(text: str) -> str:
    text = _LINK_TEXT.sub(r"\1", text)
    text = " ".join(text.replace("**", "").replace("__", "").replace("`", "").split())
    text = _ESCAPED.sub(r"\1", text)
    return text[:_MAX_HEADING_TITLE]


def _heading_path(titles: list[str]) -> str:
    joined = " > ".join(titles)
    while len(joined) > MAX_HEADING_PATH and len(titles) > 1:
        titles = titles[1:]  # the innermost headings say the most about the text
        joined = "… > " + " > ".join(titles)
    return joined[:MAX_HEADING_PATH]


# --- Chunks --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Unit:
    """A piece of a paragraph that is never cut when packing (but may lend a suffix to the next overlap)."""

    text: str
    tokens: int
    section: int
    # What joins it to the unit before it in the same chunk: "\n\n" between paragraphs, "\n" between blocks of a
    # paragraph (text, fence, table), "" between the lossless pieces of one block (their spaces are in them).
    separator: str
    # Code and table pieces are whole Markdown blocks: a suffix of one would leave a fence unbalanced.
    divisible: bool
    page: int | None = None


def chunk_paragraphs(
    paragraphs: list[Paragraph], chunk_size: int = 800, chunk_overlap: int = 100
) -> list[ChunkSpec]:
    """Pack paragraphs into chunks of at most ``chunk_size`` tokens, each repeating ~``chunk_overlap`` tokens.

    Paragraphs are kept whole when they fit in a chunk; a larger one is cut at sentence ends (。！？； and
    .!? followed by a space), then at line breaks, clauses and spaces, and as a last resort by characters, into
    pieces of at most chunk_size - chunk_overlap tokens, so the overlap still fits in front of them. Oversized
    code blocks are cut between lines and each piece is fenced again; oversized tables repeat their header.

    A chunk after another one in the same section starts with the end of the previous chunk: the whole trailing
    paragraphs and sentences that fit in chunk_overlap, topped up with the tail of the sentence before them
    (cut at a space where there is one) while they give less than half of it. Code and table pieces are only
    repeated whole.
    """
    _check_sizes(chunk_size, chunk_overlap)
    count = TokenCounter()
    units, paths = _units(paragraphs, chunk_size, chunk_overlap, count)
    max_chars = chunk_size * MAX_CHARS_PER_TOKEN
    chunks: list[ChunkSpec] = []
    previous: list[_Unit] = []
    index = 0
    while index < len(units):
        first = units[index]
        tail: list[_Unit] = []
        if chunk_overlap and previous and previous[-1].section == first.section:
            budget = min(chunk_overlap, chunk_size - first.tokens)
            char_budget = min(chunk_overlap * MAX_CHARS_PER_TOKEN, max_chars - len(first.text))
            tail = _overlap(previous, budget, char_budget, count)
        # Progress: every chunk takes at least this unit, so the loop runs at most len(units) times.
        body = [first]
        index += 1
        tokens = sum(unit.tokens for unit in tail) + first.tokens
        chars = sum(len(unit.text) for unit in tail) + len(first.text)
        while index < len(units):
            unit = units[index]
            if (
                unit.section != first.section
                or tokens + unit.tokens > chunk_size
                or chars + len(unit.text) > max_chars
            ):
                break
            body.append(unit)
            tokens += unit.tokens
            chars += len(unit.text)
            index += 1
        text = _join(tail + body)
        actual = count(text)
        # Unit counts add up exactly wherever units meet at a space or punctuation, but two halves of a word
        # cut by characters may count differently once joined again: check the final text and give back units.
        while actual > chunk_size and (len(body) > 1 or tail):
            if len(body) > 1:
                body.pop()
                index -= 1
            else:
                tail = []
            text = _join(tail + body)
            actual = count(text)
        pages = [unit.page for unit in tail + body if unit.page is not None]
        heading_path, sheet = paths[first.section]
        chunks.append(
            ChunkSpec(
                text=text,
                heading_path=heading_path,
                token_count=actual,
                ordinal=len(chunks),
                page_start=min(pages, default=None),
                page_end=max(pages, default=None),
                sheet=sheet,
            )
        )
        previous = tail + body
    return chunks


def _check_sizes(chunk_size: int, chunk_overlap: int) -> None:
    for name, value in (("chunk_size", chunk_size), ("chunk_overlap", chunk_overlap)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{name} must be a whole number of tokens, got {value!r}")
    if chunk_size < MIN_CHUNK_SIZE:
        raise ValueError(f"chunk_size must be at least {MIN_CHUNK_SIZE} tokens, got {chunk_size}")
    if not 0 <= chunk_overlap < chunk_size / 2:
        raise ValueError(
            f"chunk_overlap must be at least 0 and less than half of chunk_size ({chunk_size}), got {chunk_overlap}"
        )


def _units(
    paragraphs: list[Paragraph], chunk_size: int, chunk_overlap: int, count: TokenCounter
) -> tuple[list[_Unit], list[tuple[str, str]]]:
    """Paragraphs as units of at most chunk_size tokens, and the heading path and sheet of each section number."""
    limit = chunk_size - chunk_overlap
    char_limit = limit * MAX_CHARS_PER_TOKEN
    units: list[_Unit] = []
    paths: list[tuple[str, str]] = []
    for paragraph in paragraphs:
        text = paragraph.text.strip("\n").rstrip()
        if not text.strip():
            continue
        if not paths or paths[-1] != (paragraph.heading_path, paragraph.sheet):
            paths.append((paragraph.heading_path, paragraph.sheet))
        section = len(paths) - 1
        blocks = split_blocks(text)
        tokens = count(text)
        if tokens == 0:  # zero-width characters and the like: nothing to embed
            continue
        if tokens <= chunk_size and len(text) <= chunk_size * MAX_CHARS_PER_TOKEN:
            divisible = all(kind == "prose" for kind, _ in blocks)
            units.append(_Unit(text, tokens, section, "\n\n", divisible, paragraph.page))
            continue
        separator = "\n\n"
        for kind, block in blocks:
            if kind == "prose":
                pieces = segments(block, limit, char_limit, count)
                joiner = ""
            else:
                pieces = wrapped_pieces(kind, block, limit, char_limit, count)
                joiner = "\n"
            for piece in pieces:
                units.extend(
                    _bounded(
                        piece, section, separator, kind == "prose", limit, char_limit, count, paragraph.page
                    )
                )
                separator = joiner
            separator = "\n"
    return units, paths


def _bounded(
    text: str,
    section: int,
    separator: str,
    divisible: bool,
    limit: int,
    char_limit: int,
    count: TokenCounter,
    page: int | None,
) -> list[_Unit]:
    """The unit for ``text``, or, should it still be over the limit, its pieces cut by characters."""
    tokens = count(text)
    if tokens <= limit and len(text) <= char_limit:
        return [_Unit(text, tokens, section, separator, divisible, page)]
    pieces = hard_split(text, limit, char_limit, count)
    return [
        _Unit(piece, count(piece), section, separator if position == 0 else "", divisible, page)
        for position, piece in enumerate(pieces)
    ]


def _overlap(previous: list[_Unit], budget: int, char_budget: int, count: TokenCounter) -> list[_Unit]:
    """The end of the previous chunk within the budgets, as units (the first may be a suffix of a unit)."""
    picked: list[_Unit] = []
    tokens = chars = 0
    for unit in reversed(previous):
        if tokens + unit.tokens <= budget and chars + len(unit.text) <= char_budget:
            picked.append(unit)
            tokens += unit.tokens
            chars += len(unit.text)
            continue
        if unit.divisible:
            suffix = _suffix(unit.text, budget - tokens, char_budget - chars, budget // 2 - tokens, count)
            if suffix:
                picked.append(_Unit(suffix, count(suffix), unit.section, unit.separator, True, unit.page))
        break
    return picked[::-1]


def _suffix(text: str, room: int, char_room: int, wanted: int, count: TokenCounter) -> str:
    """Whole trailing sentences of ``text`` that fit; if they give fewer than ``wanted`` tokens, more characters."""
    if room <= 0 or char_room <= 0:
        return ""
    sentences = cut(text, SENTENCE_END)
    start = len(sentences)
    used = chars = 0
    while start > 0:
        sentence = sentences[start - 1]
        if used + count(sentence) > room or chars + len(sentence) > char_room:
            break
        start -= 1
        used += count(sentence)
        chars += len(sentence)
    whole = "".join(sentences[start:])
    if used >= wanted or start == 0:
        return whole.strip()
    partial = _tail_chars(sentences[start - 1], room - used, char_room - chars, count)
    return (partial + whole).strip()


def _tail_chars(text: str, room: int, char_room: int, count: TokenCounter) -> str:
    """The longest suffix of ``text`` within the limits (by bisection), not starting inside a Latin word."""
    low, high = max(0, len(text) - char_room), len(text)
    while low < high:  # smallest start whose suffix fits; every accepted start was counted
        middle = (low + high) // 2
        if count(text[middle:]) <= room:
            high = middle
        else:
            low = middle + 1
    start = low
    if 0 < start < len(text) and _latin(text[start - 1]) and _latin(text[start]):
        space = re.search(r"\s", text[start:])
        start = start + space.end() if space else len(text)
    return text[start:].lstrip()


def _latin(char: str) -> bool:
    return char.isalnum() and ord(char) < 0x2E80


def _join(units: list[_Unit]) -> str:
    parts: list[str] = []
    for unit in units:
        if parts and unit.separator:
            parts[-1] = parts[-1].rstrip()
            parts.append(unit.separator)
        parts.append(unit.text)
    return "".join(parts).strip("\n").rstrip()
