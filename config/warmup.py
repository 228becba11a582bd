"""Load and exercise what the first requests would otherwise wait for, before the server accepts any.

config/wsgi.py calls `warm_up()` in the serving process once the apps are loaded; gunicorn's worker starts
accepting connections only after its application has loaded, so a client that connects meanwhile waits in the
listen backlog instead of paying the loading inside its own request (the first page took 2.1 s, the first add
2.0 s and the first search 3.1 s without it). Each step runs the product's own code on a throw-away text: the
embedding models (query and stored-text paths, both scripts), jieba and spaCy, the vector collections, the
templates and the URL patterns. A step that fails (a backend not reachable yet) is logged and skipped: the
request that needs it will report the error as it always did.
"""

import logging
import time
from collections.abc import Callable

logger = logging.getLogger("mnemo.warmup")

_TEXTS = ("Ana met Kofi Mensah in Lisbon.", "王芳在上海见了李伟。")


def _models() -> None:
    from core import stores

    embedding_set = stores.embedding_set()
    embedding_set.embed_documents(list(_TEXTS))
    for embedder in embedding_set.spaces.values():
        for text in _TEXTS:
            embedder.embed_query(text)


def _language_tools() -> None:
    from core.text import sparse_query_vector
    from memories.entities import extract_mentions

    for text in _TEXTS:
        sparse_query_vector(text)
        extract_mentions(text)


def _write_checks() -> None:
    """What every add runs before it writes: the secret and personal-data scan (detect-secrets' plugins and ~100
    patterns compile on first use: 110 ms of the first add), token counting, fact slots and curation's anchors."""
    from core.privacy import find
    from core.text import content_words, count_tokens
    from memories.anchors import anchors
    from memories.facts import slots

    find("Call +1 415 555 0132 or 138 0013 8000.")  # phonenumbers loads each region's metadata on first use
    for text in _TEXTS:
        find(text)
        count_tokens(text)
        slots(text)
        anchors(text)
        content_words(text)


def _vector_collections() -> None:
    from knowledge.mirror import chunk_store
    from memories.mirror import memory_store

    memory_store()
    chunk_store()


def _templates_urls_and_translations() -> None:
    from pathlib import Path

    from django.conf import settings
    from django.template import engines
    from django.template.loader import get_template
    from django.urls import get_resolver
    from django.utils import translation

    get_resolver().url_patterns  # noqa: B018 - builds the resolver's patterns
    for language, _name in settings.LANGUAGES:  # each language's catalogues, read on its first request
        with translation.override(language):
            translation.gettext("Memories")
    # Every template folder of every engine: the project's and each app's (the cached loader keeps them compiled).
    folders = [Path(folder) for engine in engines.all() for folder in getattr(engine, "template_dirs", ())]
    for folder in dict.fromkeys(folders):
        for path in folder.rglob("*.html"):
            get_template(str(path.relative_to(folder)))


STEPS: dict[str, Callable[[], None]] = {
    "models": _models,
    "jieba and spaCy": _language_tools,
    "write checks": _write_checks,
    "vector collections": _vector_collections,
    "templates, URLs and translations": _templates_urls_and_translations,
}


def warm_up() -> dict[str, float]:
    """Run every step; returns each one's seconds (logged as one line)."""
    took: dict[str, float] = {}
    began = time.perf_counter()
    for name, step in STEPS.items():
        start = time.perf_counter()
        try:
            step()
        except Exception:
            logger.warning(
                "warm-up: %s failed; the first request that needs it will load it", name, exc_info=True
            )
        took[name] = time.perf_counter() - start
    parts = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in took.items())
    logger.info("Warmed up in %.1f s before accepting requests (%s).", time.perf_counter() - began, parts)
    return took
