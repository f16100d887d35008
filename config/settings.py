"""MemoryHub settings: one module, every variation comes from the environment.

With nothing configured, MemoryHub runs on an embedded PostgreSQL (pgvector
included) under ./var/, a filesystem Celery broker under ./var/broker, the
``minilm`` embeddings and the ``extractive`` language model.

Importing this module only reads configuration: it starts no server and writes no file. What a
local install needs on disk (its folders, its secret key, the running embedded server) is made by
the entry points, through memoryhub.embedded.prepare_local_install: manage.py (so ``serve``), the
WSGI/ASGI modules, the test fixtures and the benches.

Where the install lives and which database it uses is config/install.py; MemoryHub's own knobs (periodic
work, jobs, transfers, providers, recall, memory rules, archive files) are config/settings_memoryhub.py,
read in here as they are.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.install import (
    BASE_DIR,
    DATABASE_URL,
    EMBEDDED_DATABASE,
    EMBEDDED_DATABASE_NAME,
    EMBEDDED_DATABASE_URL,
    EMBEDDED_PGDATA,
    VAR_DIR,
)
from memoryhub.embedded import EMBEDDED_PGDATA_MARK
from memoryhub.env import env_bool, env_float, env_int, env_list, env_str
from memoryhub.logs import logging_config

DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1", "testserver"}


# Embedded (single machine) mode keeps one random key beside the data, written by the entry points
# when it is missing (memoryhub.embedded.prepare_local_install); None when SECRET_KEY is set.
SECRET_KEY = env_str("SECRET_KEY")
MEMORYHUB_SECRET_KEY_FILE: Path | None = None
if not SECRET_KEY:
    if not EMBEDDED_DATABASE:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. A deployment with DATABASE_URL must set SECRET_KEY "
            "(50+ random characters)."
        )
    MEMORYHUB_SECRET_KEY_FILE = VAR_DIR / "secret_key"
    if MEMORYHUB_SECRET_KEY_FILE.exists():
        SECRET_KEY = MEMORYHUB_SECRET_KEY_FILE.read_text().strip()

if DEBUG and any(host not in _LOCAL_HOSTS for host in ALLOWED_HOSTS):
    raise ImproperlyConfigured(
        "DEBUG is on while ALLOWED_HOSTS names a public host "
        f"({', '.join(h for h in ALLOWED_HOSTS if h not in _LOCAL_HOSTS)}). "
        "Turn DEBUG off or restrict ALLOWED_HOSTS to localhost."
    )

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "django_htmx",
    "template_partials",
    "banks",
    "portability",
    "curation",
    "agents",
    "config",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "memoryhub.middleware.FrontClientAddressMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "memoryhub.middleware.RequestIdMiddleware",
    "memoryhub.middleware.StreamingLivenessMiddleware",
    "memoryhub.middleware.DatabaseUnavailableMiddleware",
    "memoryhub.middleware.BodySizeLimitMiddleware",
    "memoryhub.middleware.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "memoryhub.middleware.UrlCharactersMiddleware",
    "curation.timezones.OperatorTimezoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "memoryhub.middleware.DomainErrorPageMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

# Without a URL the embedded server's address is not known yet: the entry point that starts it fills
# it in (memoryhub.embedded.prepare_local_install); a connection attempted before says so.
MEMORYHUB_DATABASE_URL = DATABASE_URL or EMBEDDED_DATABASE_URL
DATABASES = {"default": dj_database_url.parse(MEMORYHUB_DATABASE_URL or f"postgresql://postgres@/{EMBEDDED_DATABASE_NAME}",
                                              conn_max_age=env_int("MEMORYHUB_DB_CONN_MAX_AGE", 60))}
if not MEMORYHUB_DATABASE_URL:
    DATABASES["default"].setdefault("OPTIONS", {})[EMBEDDED_PGDATA_MARK] = str(EMBEDDED_PGDATA)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Django's PostgreSQL backend, checking a reused connection's health without a round trip.
DB_ENGINE = "memoryhub.postgres"
DATABASES["default"]["ENGINE"] = DB_ENGINE
# A streaming replica for reads that may lag (recall): see memoryhub/replica.py and docs/scaling.md.
DATABASE_REPLICA_URL = env_str("DATABASE_REPLICA_URL")
if DATABASE_REPLICA_URL:
    DATABASES["replica"] = dj_database_url.parse(DATABASE_REPLICA_URL,
                                                 conn_max_age=env_int("MEMORYHUB_DB_CONN_MAX_AGE", 60))
    DATABASES["replica"]["CONN_HEALTH_CHECKS"] = True
    DATABASES["replica"]["ENGINE"] = DB_ENGINE
    # A replica that does not answer is given up on quickly: recall then reads the primary.
    DATABASES["replica"].setdefault("OPTIONS", {}).setdefault("connect_timeout", env_int("MEMORYHUB_REPLICA_CONNECT_TIMEOUT", 3))
    # Tests read the test database through it rather than creating a second one.
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
# A replica further behind than this (seconds, measured on the replica) is not read; nor is one that has
# not yet replayed a bank's latest write when that bank is read (read-your-writes).
MEMORYHUB_REPLICA_MAX_LAG = env_float("MEMORYHUB_REPLICA_MAX_LAG", 5.0)
# How long a process reuses one measure of the replica's position before asking again.
MEMORYHUB_REPLICA_CHECK_SECONDS = env_float("MEMORYHUB_REPLICA_CHECK_SECONDS", 1.0)
DATABASE_ROUTERS = ["memoryhub.replica.ReplicaRouter"]
# Settings a query needs (the HNSW graph walk) are kept on the database session, set once per
# connection. Turn off behind a transaction-pooling proxy (PgBouncer pool_mode=transaction), where a
# session is not the client's: each query then sets them in its own transaction.
MEMORYHUB_DB_SESSION_SETTINGS = env_bool("MEMORYHUB_DB_SESSION_SETTINGS", True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"  # made by the entry points (collectstatic fills it)
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if env_bool("MEMORYHUB_COMPRESS_STATIC", not DEBUG and not EMBEDDED_DATABASE)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = True

LOGIN_URL = "curation:login"
# Every password check counts failures and honours lockouts (curation.login_guard).
AUTHENTICATION_BACKENDS = ["curation.login_guard.LockoutModelBackend"]
MEMORYHUB_LOGIN_MAX_FAILURES = env_int("MEMORYHUB_LOGIN_MAX_FAILURES", 10)  # per account, per window
MEMORYHUB_LOGIN_MAX_FAILURES_PER_ADDRESS = env_int("MEMORYHUB_LOGIN_MAX_FAILURES_PER_ADDRESS", 50)
MEMORYHUB_LOGIN_FAILURE_WINDOW = env_int("MEMORYHUB_LOGIN_FAILURE_WINDOW", 900)  # seconds
MEMORYHUB_LOGIN_LOCKOUT_SECONDS = env_int("MEMORYHUB_LOGIN_LOCKOUT_SECONDS", 900)
LOGIN_REDIRECT_URL = "curation:home"
LOGOUT_REDIRECT_URL = "curation:login"

# Cookies: secure and HTTP-only whenever not served from localhost in development.
SECURE_COOKIES = env_bool("MEMORYHUB_SECURE_COOKIES", not DEBUG and not EMBEDDED_DATABASE)
SESSION_COOKIE_SECURE = SECURE_COOKIES
CSRF_COOKIE_SECURE = SECURE_COOKIES
SESSION_COOKIE_HTTPONLY = True
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True

# Request body cap, checked before parsing (Astrocyte's gateway default: 10 MiB).
# The changes feed holds back changes younger than this, so none is skipped by a later commit.
MEMORYHUB_CHANGES_SETTLE_SECONDS = env_float("MEMORYHUB_CHANGES_SETTLE_SECONDS", 5.0)
MEMORYHUB_MAX_REQUEST_BYTES = env_int("MEMORYHUB_MAX_REQUEST_BYTES", 10 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MEMORYHUB_MAX_REQUEST_BYTES
# The first handler only reports progress (memoryhub.liveness): a long upload that keeps moving is not
# cut by the web worker's timeout. The others are Django's defaults.
FILE_UPLOAD_HANDLERS = [
    "memoryhub.liveness.ProgressUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["banks.api.auth.ApiTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["banks.api.parsers.SafeJSONParser"],
    "EXCEPTION_HANDLER": "memoryhub.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["banks.api.throttling.TokenRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"token": env_str("MEMORYHUB_RATE_LIMIT", "6000/min")},
    "DEFAULT_SCHEMA_CLASS": "config.openapi.ApiSchema",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "MemoryHub API",
    "DESCRIPTION": "Memory banks for AI agents: the Astrocyte /v1 API and MemoryHub's extensions.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/v1",
    "POSTPROCESSING_HOOKS": ["config.openapi.whole_api_components"],
    "DISABLE_ERRORS_AND_WARNINGS": True,
}

# The cache holds the rate-limit counts, so it must be one for every web process: Redis when
# configured, else a table in the database (created by a migration, see banks 0005).
CACHE_TABLE = "memoryhub_cache"
# Rate limits are counted atomically where the cache lives: INCR on this Redis when set, else an upsert
# on a table of their own (banks.services.rate_limits); the cache's own get-then-set would lose counts.
MEMORYHUB_CACHE_URL = env_str("MEMORYHUB_CACHE_URL")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env_str("MEMORYHUB_CACHE_URL"),
    }
    if env_str("MEMORYHUB_CACHE_URL")
    else {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": CACHE_TABLE}
}

# Celery: a broker that needs no server by default (files under var/broker, made by the entry points).
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or "filesystem://"
if CELERY_BROKER_URL == "filesystem://":
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
CELERY_TASK_DEFAULT_QUEUE = env_str("MEMORYHUB_CELERY_QUEUE", "memoryhub")
# The job sweep has a queue of its own ("<default queue>-sweep", config.celery.route_task) served by a
# worker of its own, so a pool busy with long imports never delays it (docs/operations.md).
CELERY_TASK_ROUTES = ("config.celery.route_task",)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("MEMORYHUB_CELERY_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
from config.settings_memoryhub import *  # noqa: E402,F403  (MemoryHub's own settings, named above)

# Every line carries its request's X-Request-ID (memoryhub.logs); MEMORYHUB_LOG_FORMAT=json writes one
# JSON object a line. The Celery worker and beat format their own handlers the same way (config/celery.py).
MEMORYHUB_LOG_FORMAT = env_str("MEMORYHUB_LOG_FORMAT", "plain").lower()
LOGGING = logging_config(MEMORYHUB_LOG_FORMAT, env_str("MEMORYHUB_LOG_LEVEL", "INFO"))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
