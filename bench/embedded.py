"""Mnemo on its embedded defaults inside a benchmark process (SQLite, Qdrant Edge, local models)."""

import os
from pathlib import Path

# Variables that would move Mnemo off its embedded defaults.
NON_DEFAULT_PREFIXES = ("QDRANT_", "NEO4J_", "EMBED_", "CELERY_", "MNEMO_", "LLM_")


def embedded_environ(environ: dict[str, str], data_dir: Path) -> dict[str, str]:
    """`environ` without the variables that would move Mnemo off its defaults, with its data in `data_dir`."""
    kept = {
        k: v for k, v in environ.items() if not k.startswith(NON_DEFAULT_PREFIXES) and k != "DATABASE_URL"
    }
    kept.update(MNEMO_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="config.settings", HF_HUB_OFFLINE="1")
    return kept


def setup_django(data_dir: Path, **settings: str) -> None:
    """Django in this process on a fresh embedded data dir, migrated; `settings` are environment variables to
    set on top of the defaults (e.g. EMBED_MODEL_TYPE to compare embedding sets)."""
    environ = embedded_environ(dict(os.environ), data_dir) | settings
    os.environ.clear()
    os.environ.update(environ)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
