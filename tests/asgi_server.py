"""An ASGI app served by uvicorn in a thread of the test process, for tests whose client is a real
HTTP client (the MCP SDK, Astrocyte's team client). Same process, so the test database and settings
overrides apply; the queries run in asgiref's shared sync thread, whose connection is closed at the end."""

from __future__ import annotations

import asyncio
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
        # Close the connection of the thread the views ran their queries in, so the test database
        # can be dropped.
        from asgiref.sync import sync_to_async
        from django.db import connections

        asyncio.run(sync_to_async(connections.close_all, thread_sensitive=True)())
