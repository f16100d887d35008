"""The web front: an asynchronous server that takes whole requests before a web worker sees them.

gunicorn's sync workers (``serve``'s default, for their fairness and throughput) each serve one
connection at a time, from its first byte to its last. A client that sends its request one byte every
few seconds holds a worker for as long as it likes, and as many such clients as there are workers stop
the server (``/live`` included). This front, run by ``serve`` on the public address, answers that the
way nginx's buffering does:

* a connection costs a coroutine here, never a worker: the request's head and body are read here, at
  the client's pace (the body spooled to a temporary file past 1 MiB, refused with 413 past
  ``--max-body``, and a client silent for ``--idle-timeout`` seconds in the middle of its body is let go);
  a head not complete ``--head-timeout`` seconds after the connection opened (or after the previous
  answer on a kept-alive connection) is answered 408 and the connection closed, however steadily its
  bytes trickle in, so trickling heads cannot pile up until ``--limit-concurrency`` refuses everyone;
* only a complete request goes to gunicorn, over a Unix socket nobody else can reach;
* the answer is read from gunicorn as fast as gunicorn writes it (spooled to a temporary file past
  8 MiB) while it is sent on at the client's pace: a slow reader holds no worker either, and a long
  download starts at once.

The client's address goes to gunicorn as ``X-Forwarded-For`` (set here, never passed through), which
``memoryhub.middleware.FrontClientAddressMiddleware`` puts in ``REMOTE_ADDR`` for requests that came
over the socket. Run as ``python -m config.front --bind HOST:PORT --upstream PATH``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import tempfile
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import h11

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# Hop-by-hop headers (RFC 9110 7.6.1) and those this front sets itself.
_DROPPED_REQUEST = {b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer", b"transfer-encoding",
                    b"upgrade", b"content-length", b"x-forwarded-for", b"x-forwarded-proto", b"expect"}
_DROPPED_RESPONSE = {b"connection", b"keep-alive", b"proxy-connection", b"trailer", b"transfer-encoding", b"upgrade"}
READ_SIZE = 64 * 1024
BODY_IN_MEMORY = 1024 * 1024
ANSWER_IN_MEMORY = 8 * 1024 * 1024


class _Spool:
    """Bytes written by one task and read by another, in order: in memory up to a bound, then on disk."""

    def __init__(self, in_memory: int, directory: str | None) -> None:
        self.in_memory, self.directory = in_memory, directory
        self.chunks: collections.deque[bytes] = collections.deque()
        self.buffered = 0
        self.fd: int | None = None
        self.written = self.read = 0  # bytes of the file
        self.size = 0  # of a finished request body
        self.done = False
        self.error: BaseException | None = None
        self.ready = asyncio.Event()

    def put(self, data: bytes) -> None:
        if self.fd is None and self.buffered + len(data) <= self.in_memory:
            self.chunks.append(data)
            self.buffered += len(data)
        else:
            if self.fd is None:
                self.fd, name = tempfile.mkstemp(prefix="front-", dir=self.directory)
                os.unlink(name)
            os.write(self.fd, data)
            self.written += len(data)
        self.ready.set()

    def finish(self, error: BaseException | None = None) -> None:
        self.done, self.error = True, error
        self.ready.set()

    async def take(self) -> bytes | None:
        """The next bytes, waiting for them; None at the end."""
        while True:
            if self.chunks:
                data = self.chunks.popleft()
                self.buffered -= len(data)
                return data
            if self.fd is not None and self.read < self.written:
                data = os.pread(self.fd, min(READ_SIZE, self.written - self.read), self.read)
                self.read += len(data)
                return data
            if self.done:
                if self.error is not None:
                    raise self.error
                return None
            self.ready.clear()
            await self.ready.wait()

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class _ClientGone(Exception):
    pass


def _error(status: int, code: str, message: str, retry_after: int | None = None) -> tuple[list[tuple[bytes, bytes]], bytes]:
    body = json.dumps({"detail": message, "error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    return headers, body


class Front:
    def __init__(self, *, upstream: str, max_body: int, idle_timeout: float, spool_dir: str | None) -> None:
        self.upstream, self.max_body, self.idle_timeout, self.spool_dir = upstream, max_body, idle_timeout, spool_dir

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            body = await self._body(scope, receive, send)
        except _ClientGone:
            return
        if body is None:
            return
        try:
            await self._forward(scope, body, send)
        finally:
            body.close()

    async def _reply(self, send: Send, status: int, code: str, message: str, retry_after: int | None = None) -> None:
        headers, body = _error(status, code, message, retry_after)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _body(self, scope: Scope, receive: Receive, send: Send) -> _Spool | None:
        """The whole request body, or None once an error was answered."""
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            await self._reply(send, 413, "request_too_large", f"Request body too large (limit {self.max_body} bytes)")
            return None
        spool = _Spool(BODY_IN_MEMORY, self.spool_dir)
        size = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), self.idle_timeout)
            except TimeoutError:
                spool.close()
                await self._reply(send, 408, "request_timeout",
                                  f"No part of the request body came for {self.idle_timeout:.0f} s")
                return None
            if message["type"] == "http.disconnect":
                spool.close()
                raise _ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                spool.close()
                await self._reply(send, 413, "request_too_large",
                                  f"Request body too large (limit {self.max_body} bytes)")
                return None
            if chunk:
                spool.put(chunk)
            if not message.get("more_body", False):
                spool.finish()
                spool.size = size
                return spool

    def _request_head(self, scope: Scope, length: int) -> h11.Request:
        target = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        headers = [(name, value) for name, value in scope["headers"] if name.lower() not in _DROPPED_REQUEST]
        if not any(name.lower() == b"host" for name, _ in headers):
            headers.append((b"host", b"localhost"))
        client = scope.get("client")
        headers += [(b"content-length", str(length).encode()), (b"connection", b"close"),
                    (b"x-forwarded-proto", scope.get("scheme", "http").encode())]
        if client:
            headers.append((b"x-forwarded-for", str(client[0]).encode()))
        return h11.Request(method=scope["method"], target=target, headers=headers)

    async def _forward(self, scope: Scope, body: _Spool, send: Send) -> None:
        try:
            reader, writer = await asyncio.open_unix_connection(self.upstream)
        except OSError:
            await self._reply(send, 503, "service_unavailable",
                              "The web server is starting or restarting; try again shortly", retry_after=2)
            return
        conn = h11.Connection(our_role=h11.CLIENT)
        try:
            writer.write(conn.send(self._request_head(scope, body.size)))
            while (chunk := await body.take()) is not None:
                writer.write(conn.send(h11.Data(data=chunk)))
                await writer.drain()
            writer.write(conn.send(h11.EndOfMessage()))
            await writer.drain()
            answer = _Spool(ANSWER_IN_MEMORY, self.spool_dir)
            head: asyncio.Future[h11.Response] = asyncio.get_running_loop().create_future()
            pump = asyncio.create_task(_pump(conn, reader, head, answer))
            started = False
            try:
                response = await head
                await send({"type": "http.response.start", "status": response.status_code,
                            "headers": [(n, v) for n, v in response.headers if n.lower() not in _DROPPED_RESPONSE]})
                started = True
                while (chunk := await answer.take()) is not None:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except (h11.ProtocolError, ConnectionError) as exc:
                if not started:
                    await self._reply(send, 502, "bad_gateway", f"The web server's answer broke off: {exc}")
                # Once started, the cut connection is how the client learns the answer is incomplete.
            finally:
                pump.cancel()
                answer.close()
        finally:
            writer.close()


async def _pump(conn: h11.Connection, reader: asyncio.StreamReader, head: asyncio.Future[h11.Response],
                answer: _Spool) -> None:
    """Read gunicorn's answer as fast as it comes: the head into ``head``, the body into ``answer``."""
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(READ_SIZE))
            elif isinstance(event, h11.Response):
                head.set_result(event)
            elif isinstance(event, h11.Data):
                if event.data:
                    answer.put(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                if not head.done():
                    raise ConnectionError("the web server closed the connection without answering")
                answer.finish()
                return
    except Exception as exc:  # handed to the sending side, which answers 502 or cuts the stream
        error = exc if isinstance(exc, h11.ProtocolError | ConnectionError) else ConnectionError(repr(exc))
        if not head.done():
            head.set_exception(error)
        answer.finish(error)


def head_deadline_protocol(head_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a deadline on each request head. uvicorn times only the idle gap
    between kept-alive requests (any byte resets it), so a head sent a byte at a time would otherwise
    hold its connection for ever. The deadline is for the whole head, not between its bytes."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadDeadline(H11Protocol):
        head_timer: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self.head_timer = self.loop.call_later(head_timeout, self._head_too_slow)

        def _disarm(self) -> None:
            if self.head_timer is not None:
                self.head_timer.cancel()
                self.head_timer = None

        def _head_too_slow(self) -> None:
            self.head_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                # No request yet, so h11 has nothing to answer with: the bytes are written as they are.
                self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n"
                                     b"connection: close\r\n\r\n")
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the head is in: its body has the idle timeout
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # the next request's head on this kept-alive connection

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeadDeadline


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bind", required=True, help="HOST:PORT to listen on")
    parser.add_argument("--upstream", required=True, help="gunicorn's Unix socket")
    parser.add_argument("--max-body", type=int, default=2 * 1024 ** 3 + 1024 ** 2)
    parser.add_argument("--idle-timeout", type=float, default=60.0)
    parser.add_argument("--head-timeout", type=float, default=30.0,
                        help="seconds a request's head may take to arrive, all of it")
    parser.add_argument("--spool-dir", default=None)
    parser.add_argument("--limit-concurrency", type=int, default=4096)
    parser.add_argument("--forwarded-allow-ips", default="",
                        help="proxies in front of this one whose X-Forwarded-For is believed (none by default)")
    args = parser.parse_args(argv)
    host, _, port = args.bind.rpartition(":")
    app = Front(upstream=args.upstream, max_body=args.max_body, idle_timeout=args.idle_timeout,
                spool_dir=args.spool_dir)
    uvicorn.run(app, host=host.strip("[]") or "127.0.0.1", port=int(port), lifespan="off", access_log=False,
                proxy_headers=bool(args.forwarded_allow_ips), forwarded_allow_ips=args.forwarded_allow_ips or None,
                limit_concurrency=args.limit_concurrency, timeout_keep_alive=5, log_level="warning",
                server_header=False, date_header=False, http=head_deadline_protocol(args.head_timeout))


if __name__ == "__main__":
    main()
