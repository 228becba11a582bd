"""Django's SQLite backend with a fair queue for the one write lock (see base.py)."""
