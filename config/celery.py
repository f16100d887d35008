from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger, beat_init, worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("memoryhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Tasks that must run even while every worker of the default queue is busy (a long import on each):
# they go to "<default queue>-sweep", which a worker of its own serves (``manage.py serve`` starts it).
SWEEP_TASKS = frozenset({"portability.sweep_jobs"})


def sweep_queue(default_queue: str | None = None) -> str:
    return f"{default_queue or app.conf.task_default_queue}-sweep"


def route_task(name: str, args: object, kwargs: object, options: object, task: object = None,
               **rest: object) -> dict[str, str] | None:
    """Celery router: the sweep to its own queue, everything else to the default one."""
    if name in SWEEP_TASKS:
        return {"queue": sweep_queue()}
    return None

@worker_init.connect
@beat_init.connect
def _prepare_local_install(**kwargs: Any) -> None:
    """A worker or beat is an entry point too: an embedded install's folders, key and server are made
    ready before its first task (a process ``serve`` starts is handed the server's address)."""
    from django.conf import settings

    from memoryhub.embedded import prepare_local_install

    prepare_local_install(settings)


@after_setup_logger.connect
@after_setup_task_logger.connect
def _format_like_the_web(logger: logging.Logger, **kwargs: Any) -> None:
    """Celery installs its own handlers: they carry the request id field and write JSON when
    MEMORYHUB_LOG_FORMAT=json, as the web's do (memoryhub.logs)."""
    from django.conf import settings

    from memoryhub.logs import PLAIN_FORMAT, JsonFormatter, RequestIdFilter

    formatter = JsonFormatter() if settings.MEMORYHUB_LOG_FORMAT == "json" else logging.Formatter(PLAIN_FORMAT)
    for handler in logger.handlers:
        handler.addFilter(RequestIdFilter())
        handler.setFormatter(formatter)
