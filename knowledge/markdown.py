"""A document's Markdown as HTML that is safe to put in a page.

Two independent layers, so a bug in one is caught by the other:

1. markdown-it-py with `html` off: raw HTML in the Markdown (a <script>, an <img onerror=…>) comes out as escaped
   text, and its link validator already refuses javascript:, vbscript:, file: and most data: URLs.
2. nh3 (ammonia) over the result: only the tags and attributes below survive, URLs must be absolute
   http/https/mailto (relative ones are dropped, so a document cannot point at this site's own URLs), every
   link gets rel="noopener noreferrer nofollow", and comments are stripped.

No style attributes are kept: the CSP forbids inline styles anyway (markdown-it writes table alignment that way).
"""

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

ALLOWED_TAGS = frozenset(
    {
        "a",
        "blockquote",
        "br",
        "code",
        "del",
        "em",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "img",
        "li",
        "ol",
        "p",
        "pre",
        "s",
        "strong",
        "table",
        "tbody",
        "td",
        "th",
        "thead",
        "tr",
        "ul",
    }
)
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "ol": {"start"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})

_renderer = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)


def sanitise_html(html: str) -> str:
    """`html` reduced to the allow-list; anything else (tags, attributes, URLs) is removed."""
    return nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        clean_content_tags={"script", "style"},
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        url_relative="deny",
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def render_markdown(markdown: str) -> SafeString:
    """Markdown to sanitised HTML, marked safe for templates (this is the one place that may do so)."""
    return mark_safe(sanitise_html(_renderer.render(markdown or "")))  # noqa: S308 - sanitised just above
