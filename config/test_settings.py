"""Settings for pytest: the embedded defaults in a throw-away data folder, fast hashing, no manifest."""

import atexit
import os
import shutil
import tempfile

# Tests never touch the developer's var/: each run gets its own data folder unless one is given, and removes it
# at exit (the processes it starts inherit the variable, so only the one that made the folder removes it).
if "MNEMO_DATA_DIR" not in os.environ:
    os.environ["MNEMO_DATA_DIR"] = tempfile.mkdtemp(prefix="mnemo-test-")
    atexit.register(shutil.rmtree, os.environ["MNEMO_DATA_DIR"], ignore_errors=True)

from config.settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
# Look each static file up when it is asked for: otherwise every test client's middleware walks the finders' 55 MB
# of front-end files when it is built (~6 % of the unit lane's CPU).
WHITENOISE_AUTOREFRESH = True
MNEMO_TASKS_EAGER = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405 - whitenoise warns about a missing folder

if DATABASES["default"]["ENGINE"] == "core.sqlite":  # noqa: F405
    # Django's in-memory test database, as without the setting, but named: pytest-django gives each xdist worker
    # its own test database by suffixing the name, and would suffix the data file's path (it does not take
    # core.sqlite for SQLite) instead of leaving the in-memory name alone.
    DATABASES["default"]["TEST"] = {"NAME": ":memory:"}  # noqa: F405
