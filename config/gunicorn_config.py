"""gunicorn settings `serve` loads with ``--config python:config.gunicorn_config``.

Only hooks live here; the command line sets workers, timeouts and logging.
"""

from __future__ import annotations

import os
from typing import Any


def when_ready(server: Any) -> None:
    """In the master, once its socket listens and before the first worker forks: the local embedding
    model is loaded here, so every worker shares one copy of it (banks.providers.embeddings.load_before_fork).

    The master only sets Django up for this (no request is served and no connection kept here). Any
    failure leaves the workers as they were before: each loads the model on its first use."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.conf import settings

    from memoryhub.embedded import prepare_local_install

    try:
        prepare_local_install(settings)  # as config.wsgi does: a local install's folders and key
        django.setup()
        from banks.providers.embeddings import load_before_fork

        loaded = load_before_fork()
    except Exception as exc:  # never keeps the server from starting
        server.log.warning("the embedding model was not loaded before the workers start (%s: %s); "
                           "each worker loads its own", exc.__class__.__name__, exc)
        return
    finally:
        if settings.configured:
            from django.db import connections

            connections.close_all()  # a forked worker must not inherit an open connection
    if loaded:
        server.log.info("embedding model %s loaded once for every worker", loaded)


def post_worker_init(worker: Any) -> None:
    from memoryhub import liveness

    liveness.register(worker.notify)
