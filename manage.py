#!/usr/bin/env python
"""Django's command-line utility, with configuration errors reported as one readable line.

Run without MNEMO_DATA_DIR, a command opens the data folder `make run` served last (it records the folder in
.mnemo-data-dir), and says so when that is not var/; with neither, it opens var/ and refuses to make a new one
for a command that only reads or changes data, so that a mistyped command never leaves an empty stray folder.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SERVED = ROOT / ".mnemo-data-dir"  # written by `make run`
# Commands that may start a data folder of their own (or read none).
STARTS_A_FOLDER = frozenset(
    {"migrate", "setup_demo", "import_user", "migrate_up", "collectstatic", "check", "makemigrations", "help"}
)


def choose_data_folder(argv: list[str]) -> str | None:
    """Set MNEMO_DATA_DIR when it is unset: the folder `make run` served last, else var/. Returns a line to
    show on stderr, or exits when the command would only find an empty new folder."""
    if os.environ.get("MNEMO_DATA_DIR", "").strip():
        return None
    default = ROOT / "var"
    served = Path(SERVED.read_text().strip()) if SERVED.is_file() else None
    if served is not None and served.is_dir():
        os.environ["MNEMO_DATA_DIR"] = str(served)
        if served.resolve() != default.resolve():
            return f"Using the data folder `make run` served last: {served} (set MNEMO_DATA_DIR to choose another)."
        return None
    command = argv[1] if len(argv) > 1 else "help"
    if not default.exists() and command not in STARTS_A_FOLDER and not command.startswith("-"):
        sys.exit(
            f"No data folder: MNEMO_DATA_DIR is not set and {default} does not exist. Set MNEMO_DATA_DIR to the "
            "folder the server uses, or create this one with `make run` or `manage.py migrate`."
        )
    return None


def main() -> None:
    notice = choose_data_folder(sys.argv)
    if notice:
        print(notice, file=sys.stderr)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line
    from django.db.utils import OperationalError

    from core.graphstore.base import GraphStoreError
    from core.vectorstore.base import VectorStoreError

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        sys.exit(f"Configuration error: {exc}")
    except OperationalError as exc:
        sys.exit(f"Database error: {exc}. {_database_hint()}")
    except VectorStoreError as exc:
        sys.exit(f"Vector store error: {exc}")
    except GraphStoreError as exc:
        sys.exit(f"Graph store error: {exc}")


def _database_hint() -> str:
    from django.conf import settings

    if os.environ.get("DATABASE_URL", "").strip():
        return "Check DATABASE_URL (unset it to use the embedded SQLite store)."
    return (
        f"This opened the SQLite database in the data folder {settings.DATA_DIR}: if the server uses another, set "
        "MNEMO_DATA_DIR to it; if this folder is new, `manage.py migrate` gives it Mnemo's tables."
    )


if __name__ == "__main__":
    main()
