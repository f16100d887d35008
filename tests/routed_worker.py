"""``python -m tests.routed_worker -A config worker …``: a Celery worker whose statements the routing check sees.

tests/worker.py starts the real worker of the tests about background work with this instead of
``python -m celery``: the same worker, with the statement-routing check (tests/bank_routing.py) hooked
into every connection it opens, writing what does not pin one bank to the file the test run named in
``MEMORYHUB_BANK_ROUTING_LOG``. Without that variable it is the plain worker.
"""

from __future__ import annotations

import os

import django


def main() -> None:
    django.setup()
    from tests.bank_routing import WORKER_LOG_VARIABLE, worker_install

    log = os.environ.get(WORKER_LOG_VARIABLE)
    if log:
        worker_install(log)
    from celery.__main__ import main as celery_main

    celery_main()


if __name__ == "__main__":
    main()
