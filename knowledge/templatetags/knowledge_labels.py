"""Where a passage is ("page 3", "sheet Sales"), in the page's language, for a chunk or a citation as the search
gives it (knowledge.search: page, page_end, sheet); the API keeps the English `location`."""

from typing import Any

from django import template

from knowledge.models import Chunk, location_label

register = template.Library()


@register.filter
def where(value: Any) -> str:
    if isinstance(value, Chunk):
        return location_label(
            page_start=value.page_start, page_end=value.page_end, sheet=value.sheet, translated=True
        )
    if isinstance(value, dict):
        return location_label(
            page_start=value.get("page"),
            page_end=value.get("page_end"),
            sheet=value.get("sheet") or "",
            translated=True,
        )
    return ""
