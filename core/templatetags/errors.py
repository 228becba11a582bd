"""{{ document.error|without_paths }}: an error shown on a page names no file on the server (core.text)."""

from django import template

from core.text import without_paths as _without_paths

register = template.Library()


@register.filter(is_safe=False)
def without_paths(text: object) -> str:
    return _without_paths(str(text))
