"""An ASGI app served by uvicorn in a thread of the test process, for tests whose client is a real
HTTP client (the MCP SDK, Astrocyte's team client). Same process, so the test database and settings
overrides apply; the connections its queries ran on are closed at the end."""

from __future__ import annotations

import asyncio
import gc
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` served on a free localhost port; yields its base URL."""
    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        # Close the connections the views ran their queries on, so the test database can be dropped.
        # Django's ASGI handler gives each request a thread of its own (asgiref's ThreadSensitiveContext),
        # gone once the request ends, whose connection waits for the garbage collector to be closed
        # (config/asgi.py closes them at each request's end; the settings here are the test run's).
        # Other code (an MCP app) runs its queries on asgiref's shared thread.
        gc.collect()
        from asgiref.sync import sync_to_async
        from django.db import connections

        asyncio.run(sync_to_async(connections.close_all, thread_sensitive=True)())
