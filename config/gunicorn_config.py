"""gunicorn settings `serve` loads with ``--config python:config.gunicorn_config``.

Only hooks live here; the command line sets workers, timeouts and logging.
"""

from __future__ import annotations

from typing import Any


def post_worker_init(worker: Any) -> None:
    from memoryhub import liveness

    liveness.register(worker.notify)
