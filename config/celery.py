from __future__ import annotations

import os

from celery import Celery

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
