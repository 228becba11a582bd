#!/usr/bin/env python
"""Django's command-line utility, with configuration errors reported as one readable line."""

import os
import sys


def main() -> None:
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
        sys.exit(f"Database error: {exc}. Check DATABASE_URL (unset it to use the embedded SQLite store).")
    except VectorStoreError as exc:
        sys.exit(f"Vector store error: {exc}")
    except GraphStoreError as exc:
        sys.exit(f"Graph store error: {exc}")


if __name__ == "__main__":
    main()
