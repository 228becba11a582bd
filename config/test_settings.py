"""Settings for pytest: the embedded defaults in a throw-away data folder, fast hashing, no manifest."""

import os
import tempfile

# Tests never touch the developer's var/: each run gets its own data folder unless one is given.
os.environ.setdefault("MNEMO_DATA_DIR", tempfile.mkdtemp(prefix="mnemo-test-"))

from config.settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
MNEMO_TASKS_EAGER = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405 - whitenoise warns about a missing folder
