"""Lossless cuts of Markdown text within a token and a character limit, for knowledge/pipeline/split.py.

Every cut keeps all characters ("".join(pieces) == text for prose), so the chunks of a paragraph put back
together give the paragraph. Prose is cut at sentence ends, then at line breaks, clauses and spaces, and as a
last resort by characters; an oversized code block or table is cut between lines and each piece is a whole block
again. Pure functions, no Django.
"""

import re

from core.text import count_tokens

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class TokenCounter:
    """count_tokens with a cache for one chunking call (the same sentence is looked at by several steps)."""

    def __init__(self) -> None:
        self._known: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        known = self._known.get(text)
        if known is None:
            known = self._known[text] = count_tokens(text)
        return known


def fence_marker(line: str) -> str:
    opening = _FENCE.match(line)
    if opening and not (opening.group(1)[0] == "`" and "`" in line.strip()[len(opening.group(1)) :]):
        return opening.group(1)
    return ""


def closes_fence(line: str, marker: str) -> bool:
    stripped = line.strip()
    return (
        len(stripped) >= len(marker) and set(stripped) == {marker[0]} and len(line) - len(line.lstrip()) < 4
    )


def split_blocks(text: str) -> list[tuple[str, str]]:
    """A paragraph as ("prose" | "fence" | "table", text) blocks in order."""
    blocks: list[tuple[str, str]] = []
    current: list[str] = []
    current_kind = ""
    lines = text.split("\n")
    position = 0
    while position < len(lines):
        line = lines[position]
        marker = fence_marker(line)
        if marker:
            if current:
                blocks.append((current_kind, "\n".join(current)))
                current, current_kind = [], ""
            end = position + 1
            while end < len(lines) and not closes_fence(lines[end], marker):
                end += 1
            blocks.append(("fence", "\n".join(lines[position : end + 1])))
            position = end + 1
            continue
        kind = "table" if line.lstrip().startswith("|") else "prose"
        if current and kind != current_kind:
            blocks.append((current_kind, "\n".join(current)))
            current = []
        current_kind = kind
        current.append(line)
        position += 1
    if current:
        blocks.append((current_kind, "\n".join(current)))
    return blocks


# Lossless cuts: each pattern matches the end of a piece, spaces included, so "".join(pieces) == text.
SENTENCE_END = re.compile(r"[。！？；]+[”’」』）)\"'\]]*\s*|[.!?]+[”’)\"'\]]*\s+")
_LINE_END = re.compile(r"\n")
_CLAUSE_END = re.compile(r"[，、：]\s*|[,;:]\s+")
_SPACE = re.compile(r"\s+")
_CUTS = (SENTENCE_END, _LINE_END, _CLAUSE_END, _SPACE)


def cut(text: str, pattern: re.Pattern) -> list[str]:
    ends = [match.end() for match in pattern.finditer(text) if 0 < match.end() < len(text)]
    bounds = [0, *ends, len(text)]
    return [text[start:end] for start, end in zip(bounds, bounds[1:], strict=False) if end > start]


def segments(text: str, limit: int, char_limit: int, count: TokenCounter, level: int = 0) -> list[str]:
    """Lossless pieces of prose within the limits: sentences, then lines, clauses, words, characters."""
    if len(text) <= char_limit and count(text) <= limit:
        return [text]
    if level == len(_CUTS):
        return hard_split(text, limit, char_limit, count)
    pieces = cut(text, _CUTS[level])
    if len(pieces) == 1:
        return segments(text, limit, char_limit, count, level + 1)
    return [segment for piece in pieces for segment in segments(piece, limit, char_limit, count, level + 1)]


def hard_split(text: str, limit: int, char_limit: int, count: TokenCounter) -> list[str]:
    """Lossless pieces of at most ``limit`` tokens, each the longest prefix found by bisection (at least 1 char)."""
    pieces = []
    rest = text
    while rest:
        if len(rest) <= char_limit and count(rest) <= limit:
            pieces.append(rest)
            break
        low, high = 1, min(len(rest), char_limit)
        while low < high:  # every accepted length was counted, so the piece is within the limit
            middle = (low + high + 1) // 2
            if count(rest[:middle]) <= limit:
                low = middle
            else:
                high = middle - 1
        pieces.append(rest[:low])
        rest = rest[low:]
    return pieces


_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}")


def wrapped_pieces(kind: str, block: str, limit: int, char_limit: int, count: TokenCounter) -> list[str]:
    """An oversized code block or table cut between lines; every piece is a whole block again.

    Code pieces get the opening and closing fence lines, table pieces the header row and its rule.
    """
    lines = block.split("\n")
    if kind == "fence":
        marker = fence_marker(lines[0])
        closed = len(lines) > 1 and closes_fence(lines[-1], marker)
        opening = lines[0] if count(lines[0]) <= limit // 4 else marker  # an absurd info string goes
        head, body, foot = [opening], lines[1 : -1 if closed else None], [lines[-1] if closed else marker]
    else:
        has_rule = len(lines) > 2 and _TABLE_RULE.match(lines[1]) is not None
        head, body, foot = (lines[:2] if has_rule else []), lines[2 if has_rule else 0 :], []
    wrapper = "\n".join(head + foot)
    budget = limit - count(wrapper)
    char_budget = char_limit - len(wrapper) - 2
    if budget < limit // 2 or char_budget < char_limit // 2:  # a header larger than the rows: cut as text
        return segments(block, limit, char_limit, count, level=1)
    rows: list[str] = []
    for line in body:  # a line over the budget (minified code, a giant cell) is cut into several lines
        rows.extend(segments(line, budget, char_budget, count, level=3) if line else [line])
    pieces: list[str] = []
    group: list[str] = []
    tokens = chars = 0
    for row in rows:
        row_tokens = count(row)
        if group and (tokens + row_tokens > budget or chars + len(row) + 1 > char_budget):
            pieces.append("\n".join(head + group + foot))
            group, tokens, chars = [], 0, 0
        group.append(row)
        tokens += row_tokens
        chars += len(row) + 1
    if group:
        pieces.append("\n".join(head + group + foot))
    return pieces
