"""gunicorn settings `serve` loads with ``--config python:config.gunicorn_config``.

Only hooks live here; the command line sets workers, timeouts and logging.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any

# Set in the master by when_ready; a forked worker reads it (see worker_exit).
_model_before_fork = False


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
        global _model_before_fork  # noqa: PLW0603  (the master's one flag, inherited by every fork)
        _model_before_fork = True
        server.log.info("embedding model %s loaded once for every worker", loaded)


def post_worker_init(worker: Any) -> None:
    from memoryhub import liveness

    liveness.register(worker.notify)


def worker_exit(server: Any, worker: Any) -> None:
    """In a worker as it leaves (``--max-requests``, a restart, a stop), after gunicorn's own clean-up.

    Where the master loaded the model before forking, the worker ends here: Python's exit functions run
    (the usage counters' last flush among them), the logs and streams are flushed, and the process exits
    with its status without running the C libraries' exit handlers. ONNX Runtime keeps a thread of its
    own in the master, started on import and parked on a condition variable; a forked worker holds the
    variable without the thread, and the library's exit handlers break on it. Left to exit normally, a
    worker that had not embedded yet hung for ever in glibc's ``pthread_cond_destroy`` (served nothing, with
    none in its place, until gunicorn's ``--timeout`` killed it; a stop waited out the graceful timeout),
    and one that had embedded died of SIGABRT ("terminate called after throwing an instance of
    'std::system_error'") at every recycle after ``--max-requests`` and every stop
    (tests/banks/test_model_before_fork.py)."""
    if not _model_before_fork:
        return
    # The interpreter would first join non-daemon threads: a worker leaves between requests, and the
    # threads a request starts are daemons (read_beside, usage) or joined before it answers (import_batches).
    leaving = sys.exc_info()[1]  # gunicorn calls this while the worker's SystemExit unwinds
    code = leaving.code if isinstance(leaving, SystemExit) else (1 if leaving is not None else 0)
    if not isinstance(code, int):
        if code is not None:
            print(code, file=sys.stderr)  # as the interpreter would print a SystemExit's message
        code = 0 if code is None else 1
    try:
        from django.db import connections

        connections.close_all()
    finally:
        # What the interpreter runs at exit, logging's shutdown included (a private name, there since Python 3.0).
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
