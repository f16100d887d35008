"""The load bench's HTTP clients and its measurements (bench/load_bench.py runs the load).

``Connection`` is the load's own keep-alive client, ``HttpxConnection`` the httpx one earlier figures
were measured with (``--httpx``); ``cpu_snapshot`` / ``cpu_report`` read from /proc the CPU each part of
the served stack spent, ``percentile`` the latency figures. No Django here."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections import defaultdict
from pathlib import Path

import httpx

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid: int) -> tuple[int, int, float, float] | None:
    """(ppid, session, own CPU seconds, reaped children's CPU seconds) of a process, None once gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    # After the name: state ppid pgrp session ... utime(11) stime(12) cutime(13) cstime(14), 0-based from state.
    return (int(fields[1]), int(fields[3]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS,
            (int(fields[13]) + int(fields[14])) / CLOCK_TICKS)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def cpu_snapshot(server: int, pgdata: str) -> dict[str, float]:
    """CPU seconds used so far by each part of the served stack and by this bench's own process.

    Read from /proc: the server's processes (``server`` and its descendants) by role, and the embedded
    PostgreSQL (the postmaster of ``pgdata`` and its children, with the backends it has already reaped).
    Divided by the requests answered between two snapshots, it is the CPU a request costs, which a
    shared machine measures far more steadily than throughput: req/s on two idle cores is at most
    2 s / that cost."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _proc_stat(int(entry))) is not None:
            stats[int(entry)] = stat
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (ppid, _, _, _) in stats.items():
        children[ppid].append(pid)
    totals: defaultdict[str, float] = defaultdict(float)

    def descendants(root: int) -> list[int]:
        found, todo = [], [root]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    for pid in descendants(server) if server in stats else []:
        command = _cmdline(pid)
        role = ("front" if "config.front" in command else "web" if "gunicorn" in command
                else "celery" if "celery" in command else "serve, mcp")
        # Reaped children's time is counted by gunicorn's and Celery's parents (workers recycled mid-run).
        totals[role] += stats[pid][2] + (stats[pid][3] if role in {"web", "celery"} else 0.0)
    for pid, (_, _, own, reaped) in stats.items():
        command = _cmdline(pid)
        if command.split(" ")[0].endswith("/postgres") and f"-D {pgdata} " in command + " ":
            totals["database"] += own + reaped + sum(stats[c][2] for c in children.get(pid, []))
    mine = os.times()
    totals["bench client"] = mine.user + mine.system
    return dict(totals)


def cpu_report(before: dict[str, float], after: dict[str, float], requests: int) -> None:
    if not requests:
        return
    used = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    server = sum(v for k, v in used.items() if k != "bench client")
    parts = "  ".join(f"{k} {v * 1000 / requests:.1f}" for k, v in sorted(used.items(), key=lambda kv: -kv[1]))
    print(f"  CPU per request: {server * 1000 / requests:.1f} ms in the server ({parts} ms); "
          f"at most {2000 * requests / (server * 1000):.0f} req/s on two cores if nothing else ran")


class Connection:
    """A keep-alive HTTP/1.1 connection posting JSON: the load's own client.

    The bench shares the machine's cores with the server it measures; httpx spent about 2.2 ms of CPU
    per request here (an eighth of the whole), this about a quarter of that. Responses are read by
    Content-Length, as the server always sends it.
    """

    def __init__(self, host: str, port: int, token: str) -> None:
        self.host, self.port = host, port
        self.head = (f"Host: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
                     "Content-Type: application/json\r\nConnection: keep-alive\r\n")
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: dict) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        data = json.dumps(body).encode()
        self.writer.write(f"POST {path} HTTP/1.1\r\n{self.head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = -1
            closing = False
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"connection" and value.strip().lower() == b"close":
                    closing = True
            if length < 0:
                raise ConnectionError("a response without Content-Length")
            payload = await self.reader.readexactly(length)
        except (asyncio.IncompleteReadError, ConnectionError):
            await self.close()
            raise
        if closing:
            await self.close()
        return status, payload

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(ConnectionError):
                await self.writer.wait_closed()
        self.reader = self.writer = None


class HttpxConnection:
    """The same with httpx (``--httpx``), the client earlier figures were measured with."""

    def __init__(self, base: str, token: str) -> None:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        self.http = httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60,
                                      limits=limits)

    async def post(self, path: str, body: dict) -> tuple[int, bytes]:
        try:
            response = await self.http.post(path, json=body)
        except httpx.HTTPError as exc:
            raise ConnectionError(exc.__class__.__name__) from exc
        return response.status_code, response.content

    async def close(self) -> None:
        return None


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")
