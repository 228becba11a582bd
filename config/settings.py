"""Mnemo settings: embedded defaults that need no configuration, production services chosen by environment.

.env.example lists every variable read here. With none set, Mnemo runs on SQLite (WAL) and the embedded Qdrant
Edge store inside MNEMO_DATA_DIR, an in-process worker pool, the local offline embedders and no LLM.
"""

import os
from pathlib import Path

import dj_database_url
from django.utils.csp import CSP

from config.env import (
    ConfigError,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_str,
    env_url,
)
from core.embedders.base import EmbeddingError
from core.embeddings import check_model_type

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("MNEMO_DATA_DIR", str(BASE_DIR / "var"))).resolve()
# Memories, uploads, the vector store and the secret key live here: only Mnemo's own user may look inside.
DATA_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
if DATA_DIR.stat().st_uid == os.getuid():
    DATA_DIR.chmod(0o700)

# --- Core -------------------------------------------------------------------------------------------------
DEBUG = env_bool("MNEMO_DEBUG", False)
SECRET_KEY = env_str("MNEMO_SECRET_KEY")
if not SECRET_KEY:
    # An embedded instance keeps a generated key in its data folder so sessions survive restarts.
    _key_file = DATA_DIR / "secret_key.txt"
    if _key_file.exists():
        SECRET_KEY = _key_file.read_text().strip()
    else:
        from django.core.management.utils import get_random_secret_key

        SECRET_KEY = get_random_secret_key()
        _key_file.write_text(SECRET_KEY)
        _key_file.chmod(0o600)

ALLOWED_HOSTS = env_list("MNEMO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("MNEMO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "ninja",
    "core",
    "agents",
    "conversations",
    "memories",
    "knowledge",
    "console",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "core.api_slash.ApiSlashMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "core.acting.SubjectMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "core.disconnect.ClientGoneMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "core.acting.subject",
            ],
        },
    },
]

# --- Relational store (the source of truth) ---------------------------------------------------------------
# SQLite has one write lock: this process's writers queue for it in turn (core/sqlite/base.py) and wait at most this
# long before "database is locked". Write transactions are short (a single add some milliseconds, the rows of a bulk
# of 200 a fraction of a second; the model work runs outside them), but a writer can queue behind every request
# thread's transaction, each slowed by the others on two cores.
SQLITE_BUSY_SECONDS = env_float("MNEMO_SQLITE_BUSY_SECONDS", 30.0, minimum=1.0)
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    if not DATABASE_URL.startswith(("postgres://", "postgresql://", "sqlite://")):
        raise ConfigError(
            f"DATABASE_URL must start with postgres:// (or sqlite:///path); got {DATABASE_URL.split(':')[0]}://…"
        )
    try:
        DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
    except ValueError as exc:
        raise ConfigError(f"DATABASE_URL could not be parsed: {exc}") from None
    if DATABASES["default"]["ENGINE"].endswith("postgresql"):
        # A server that never answers costs a request seconds, not the operating system's TCP timeout.
        DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", 5)
else:
    # Created owner-only before SQLite opens it; its WAL and shared-memory files take the same mode.
    (DATA_DIR / "mnemo.sqlite3").touch(mode=0o600, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "core.sqlite",  # Django's, with a fair queue for the write lock (core/sqlite/base.py)
            # django-stubs types NAME as str; Django takes a Path (its own startproject template writes one).
            "NAME": DATA_DIR / "mnemo.sqlite3",  # type: ignore[typeddict-item]
            # Each server thread keeps its connection: opening one (the PRAGMAs, Django's SQL functions) cost
            # ~1.2 ms of every request. A file connection holds nothing between requests.
            "CONN_MAX_AGE": None,
            "OPTIONS": {
                # WAL lets page reads run while the background pool writes; IMMEDIATE avoids
                # "database is locked" upgrades from read to write transactions.
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                f"PRAGMA busy_timeout={int(SQLITE_BUSY_SECONDS * 1000)};",
                "transaction_mode": "IMMEDIATE",
            },
        }
    }

# --- Vectors: Qdrant Edge in DATA_DIR by default, a Qdrant server when QDRANT_URL is set -----------------------
QDRANT_URL = env_url("QDRANT_URL", ("http", "https"))
QDRANT_API_KEY = env_str("QDRANT_API_KEY")
QDRANT_COLLECTION = env_str("QDRANT_COLLECTION", "mnemo")
QDRANT_VECTOR_SIZE = env_int("QDRANT_VECTOR_SIZE", 0, minimum=0)  # 0: take the size from the embedder
QDRANT_DISTANCE = env_choice("QDRANT_DISTANCE", "cosine", ("cosine", "dot", "euclid"))
QDRANT_TIMEOUT = env_float("QDRANT_TIMEOUT", 10.0, minimum=0.1)
QDRANT_EDGE_PATH = DATA_DIR / "qdrant-edge"
# The embedded store builds its search indexes only when asked: the serving process checks this often (0: never)
# and, once the store has had no search or write for the quiet seconds, optimizes a copy of any collection that
# is largely unindexed in a child process and swaps it in (core/vectorstore/optimizer.py).
MNEMO_VECTOR_OPTIMIZE_SECONDS = env_float("MNEMO_VECTOR_OPTIMIZE_SECONDS", 60.0, minimum=0)
MNEMO_VECTOR_OPTIMIZE_QUIET_SECONDS = env_float("MNEMO_VECTOR_OPTIMIZE_QUIET_SECONDS", 10.0, minimum=0)

# --- Graph: SQL over Entity/Relation by default, mirrored to Neo4j when NEO4J_URI is set ----------------------
NEO4J_URI = env_url("NEO4J_URI", ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"))
NEO4J_USERNAME = env_str("NEO4J_USERNAME", "neo4j")
NEO4J_PASSWORD = env_str("NEO4J_PASSWORD")
NEO4J_DATABASE = env_str("NEO4J_DATABASE", "neo4j")

# --- Embeddings (the tutorial's variable names) --------------------------------------------------------------
try:
    EMBED_MODEL_TYPE = check_model_type(env_str("EMBED_MODEL_TYPE", "local"))
except EmbeddingError as exc:
    raise ConfigError(str(exc)) from exc
EMBED_MODEL_NAME = env_str("EMBED_MODEL_NAME")
EMBED_API_KEY = env_str("EMBED_API_KEY")
EMBED_BASE_URL = env_url("EMBED_BASE_URL", ("http", "https"))
if EMBED_MODEL_TYPE in {"openai", "dashscope", "compatible"} and not (EMBED_API_KEY and EMBED_MODEL_NAME):
    raise ConfigError(f"EMBED_MODEL_TYPE={EMBED_MODEL_TYPE} needs EMBED_API_KEY and EMBED_MODEL_NAME.")

# --- LLM (optional): any OpenAI-compatible chat API ----------------------------------------------------------
LLM_BASE_URL = env_url("LLM_BASE_URL", ("http", "https"))
LLM_API_KEY = env_str("LLM_API_KEY")
LLM_MODEL = env_str("LLM_MODEL")
LLM_TIMEOUT = env_float("LLM_TIMEOUT", 60.0, minimum=1.0)
# A whole chat turn (every model call and tool round) holds a request thread at most this long.
LLM_TURN_SECONDS = env_float("LLM_TURN_SECONDS", 120.0, minimum=1.0)
if LLM_BASE_URL and not LLM_MODEL:
    raise ConfigError("LLM_BASE_URL is set but LLM_MODEL is empty: name the chat model to use.")

# --- Background work: in-process pool by default, Celery when a broker is set ---------------------------------
CELERY_BROKER_URL = env_url("CELERY_BROKER_URL", ("redis", "rediss", "amqp", "amqps"))
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", CELERY_BROKER_URL)
# Nothing reads a task's result (core.ping aside): publishing one would also subscribe to the result backend,
# which with Redis down retried 20 times (19 s) in the publishing thread.
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_TIMEOUT = 2.0  # seconds a request may wait on a broker that does not answer
# A broker (or result backend) that accepts connections and never answers would hold a publish forever.
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_timeout": 5.0, "socket_connect_timeout": 2.0}
CELERY_REDIS_SOCKET_TIMEOUT = 5.0
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 2.0
MNEMO_WORKERS = env_int("MNEMO_WORKERS", 2, minimum=1)
# Request threads that may search or write memories at once (core/cpu_slots.py); the others wait their turn. One
# per two cores: a search already keeps ~1.3 cores busy by itself (its models and store calls run side by side), so
# a second one at once on two cores only contends for Python's lock (50 clients at 10,000 memories, side by side:
# 42.6 / 38.7 searches/s with two slots, 42.7 / 48.8 with one; adds 33.3 / 34.3 and 32.6 / 35.1).
MNEMO_CPU_SLOTS = env_int("MNEMO_CPU_SLOTS", max(1, (os.cpu_count() or 1) // 2), minimum=1)
MNEMO_TASKS_EAGER = False  # tests run tasks inline in the calling thread
# The mirror outbox is swept this often (core/mirror_outbox.py: what a crash or a store down longer than a task's
# retries left): by a thread of the serving process in embedded mode, by `celery -A config beat` in production.
MNEMO_MIRROR_SWEEP_SECONDS = env_float("MNEMO_MIRROR_SWEEP_SECONDS", 30.0, minimum=0.1)
# Each vector mirror is compared with its rows this often; missing or damaged points are left for the sweeps
# (core/mirrors.py): a vector store deleted or damaged under a running server mends itself.
MNEMO_MIRROR_CHECK_SECONDS = env_float("MNEMO_MIRROR_CHECK_SECONDS", 600.0, minimum=10.0)
# Documents a killed worker left half-ingested are looked for this often (knowledge.ingest.STALLED_AFTER).
MNEMO_RESUME_SWEEP_SECONDS = 60.0
# SQLite's planner statistics are refreshed this often when a table's size has changed (core/planner_stats.py).
MNEMO_PLANNER_STATS_SECONDS = 60.0
# Each search records the memories it returned (a memory's "retrieved by" history); records older than this many
# days are deleted hourly, so the log does not grow without end (10 rows a search). 0 keeps them all.
MNEMO_ACCESS_LOG_DAYS = env_int("MNEMO_ACCESS_LOG_DAYS", 90, minimum=0)
MNEMO_ACCESS_LOG_PRUNE_SECONDS = 3600.0
CELERY_BEAT_SCHEDULE = {
    "mirror-sweep": {"task": "core.sweep_mirror_outbox", "schedule": MNEMO_MIRROR_SWEEP_SECONDS},
    "mirror-check": {"task": "core.check_mirrors", "schedule": MNEMO_MIRROR_CHECK_SECONDS},
    "resume-stalled-documents": {"task": "knowledge.resume_stalled", "schedule": MNEMO_RESUME_SWEEP_SECONDS},
    "planner-statistics": {
        "task": "core.refresh_planner_statistics",
        "schedule": MNEMO_PLANNER_STATS_SECONDS,
    },
    "access-log-retention": {"task": "memories.prune_access_log", "schedule": MNEMO_ACCESS_LOG_PRUNE_SECONDS},
}

# --- Auth, sessions, security ---------------------------------------------------------------------------------
# The login `make run` creates (manage.py setup_demo); without a password, one is generated and shown once.
MNEMO_DEMO_USERNAME = env_str("MNEMO_DEMO_USERNAME") or "demo"
MNEMO_DEMO_PASSWORD = env_str("MNEMO_DEMO_PASSWORD")
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Failed sign-ins and API keys are counted here (core.ratelimits). In-process memory serves the embedded
# default's single server process; several workers need a cache they share: MNEMO_CACHE_URL=redis://...
MNEMO_CACHE_URL = env_url("MNEMO_CACHE_URL", ("redis", "rediss"))
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": MNEMO_CACHE_URL}
        if MNEMO_CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = env_bool("MNEMO_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# Behind TLS: MNEMO_SSL_REDIRECT=1 sends plain HTTP to HTTPS; MNEMO_HSTS_SECONDS tells browsers to stay there
# (start small: a browser keeps the promise for that long); MNEMO_TLS_PROXY=1 trusts the proxy's
# X-Forwarded-Proto, which only a proxy that overwrites that header may be trusted with.
SECURE_SSL_REDIRECT = env_bool("MNEMO_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("MNEMO_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("MNEMO_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("MNEMO_HSTS_PRELOAD", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("MNEMO_TLS_PROXY", False) else None
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}

# --- Files ----------------------------------------------------------------------------------------------------
STATIC_URL = "static/"
# Front-end libraries come from npm at install time (package.json; `make` runs `npm ci`), never copied in.
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/cytoscape", BASE_DIR / "node_modules" / "cytoscape" / "dist"),
    ("vendor/chartjs", BASE_DIR / "node_modules" / "chart.js" / "dist"),
]
STATIC_ROOT = DATA_DIR / "staticfiles"
MEDIA_ROOT = DATA_DIR / "media"
MEDIA_URL = "media/"
MNEMO_MAX_UPLOAD_MB = env_int("MNEMO_MAX_UPLOAD_MB", 50, minimum=1)
# Writes (uploads, memories, ingestion, the vector optimizer's copy) leave at least this much of the data folder's
# disk free (core/disk.py): past it they are refused with 507 or paused, and the health check turns 503. The
# embedded vector store grows sparse files that it maps into memory: a write into one on a full disk kills the
# server (SIGBUS), so keep the reserve above what the store may touch at once (its files grow in 32 MB pieces).
MNEMO_DISK_RESERVE_MB = env_int("MNEMO_DISK_RESERVE_MB", 256, minimum=0)
# Each upload is converted in a child process with this much time and added memory; past either, the document
# fails with the reason and the server carries on. Under 15 minutes, after which a silent document counts as stalled.
MNEMO_CONVERT_SECONDS = env_int("MNEMO_CONVERT_SECONDS", 300, minimum=5, maximum=840)
MNEMO_CONVERT_MEMORY_MB = env_int("MNEMO_CONVERT_MEMORY_MB", 2048, minimum=256)
# Documents of one user converted at once: the others wait their turn without holding a worker, so one user's
# files (a slow or hostile one takes minutes) never take every worker from everyone else's.
MNEMO_CONVERSIONS_PER_USER = env_int("MNEMO_CONVERSIONS_PER_USER", 1, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Whitenoise serves hashed static files from one process in both embedded and compose set-ups.
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG

# Pages, messages and emails in English or Simplified Chinese: the browser's Accept-Language chooses until the
# language switch (django.views.i18n.set_language) sets the language cookie. The catalogue is locale/zh_Hans.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env_str("MNEMO_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("MNEMO_LOG_LEVEL", "INFO").upper()},
    # The MCP SDK logs a start and a stop of its transport at INFO for every /mcp request (agents.mcp_view).
    "loggers": {"mcp": {"level": "WARNING"}},
}
