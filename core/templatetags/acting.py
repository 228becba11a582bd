"""{% own_url 'api_keys' %}: a page that is always the viewer's own, linked from someone else's pages (core.acting)."""

from typing import Any

from django import template
from django.urls import reverse

from core.acting import own_url as own

register = template.Library()


@register.simple_tag(takes_context=True)
def own_url(context: template.Context, name: str, *args: Any) -> str:
    url = reverse(name, args=args)
    request = context.get("request")
    return own(request, url) if request is not None else url
