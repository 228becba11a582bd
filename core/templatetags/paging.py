"""{{ page|page_numbers }}: the page numbers a pager links, for a Django Paginator page (None marks a gap)."""

from django import template
from django.core.paginator import Page

from core.pagination import page_links

register = template.Library()


@register.filter
def page_numbers(page: Page) -> list[int | None]:
    return page_links(page.number, page.paginator.num_pages)
