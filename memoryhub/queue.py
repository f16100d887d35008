"""Handing work to the Celery broker so that a refused hand-over is a clear 503, never an orphan.

A job row must be committed before a worker can read it, so a task is sent once the
surrounding transaction commits (at once when there is none). If the broker cannot be
reached the caller hears a 503 with ``retry_after``, and ``on_refused`` marks the job row
failed, so no ``queued`` row is left behind that nothing will ever run (and that would
block the next consolidation of the bank with a 409).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction

from memoryhub.errors import ServiceUnavailable

logger = logging.getLogger(__name__)

BROKER_RETRY_AFTER = 10


def _refused_by_broker(exc: BaseException) -> bool:
    from kombu.exceptions import KombuError

    # kombu wraps connection failures in its OperationalError; a filesystem broker fails with OSError.
    return isinstance(exc, KombuError | OSError)


def _eager() -> bool:
    from celery import current_app

    return bool(current_app.conf.task_always_eager)


def enqueue_after_commit(send: Callable[[], object], *, what: str,
                         on_refused: Callable[[str], object] | None = None) -> None:
    """Call ``send`` (a task's ``delay``) after commit; raise ServiceUnavailable if the broker refuses.

    Tasks run in-process when eager (tests): their own errors are theirs, not the broker's.
    """
    eager = _eager()

    def hand_over() -> None:
        try:
            send()
        except Exception as exc:
            if eager or not _refused_by_broker(exc):
                raise
            message = f"the task queue is unavailable, {what} was not queued: {exc.__class__.__name__}: {exc}"
            logger.warning(message)
            if on_refused is not None:
                on_refused(message)
            raise ServiceUnavailable(f"The task queue is unavailable; {what} was not queued. Try again shortly",
                                     retry_after=BROKER_RETRY_AFTER) from exc

    transaction.on_commit(hand_over)


def send_task(name: str, *args: object) -> object:
    """Queue the registered task called ``name`` (eager in tests, like ``delay``).

    Services start background work by name so that they never import the task modules,
    which import the services: the dependency runs one way, from tasks to services.
    """
    # The project's app (the composition root makes it current); the kernel does not import it.
    from celery import current_app as app

    if name not in app.tasks:
        # A web process has not imported the apps' task modules yet: autodiscovery does it once.
        app.loader.import_default_modules()
    return app.tasks[name].delay(*args)
