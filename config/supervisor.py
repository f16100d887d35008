"""Keep MemoryHub's long-running processes alive on one machine.

``manage.py serve`` hands the web server, the Celery worker and beat, the MCP
endpoint and (embedded configuration) PostgreSQL to a :class:`Supervisor`. A
service that dies is logged and started again after an exponentially growing
delay, so a child that crashes at once does not spin the CPU, and one that has
run for a while starts again quickly. Nothing here gives up: an operator leaves
``make run`` running, and a crash loop should cost little while it lasts and
heal by itself when its cause goes away. Stopping walks the services from the
last started to the first, so the web processes finish before the database
goes.

The restart policy is pure (:class:`Backoff`, :meth:`Supervisor.tick` with an
injected clock) so it is tested without processes.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Backoff:
    """How long to wait before starting a crashed service again.

    ``initial`` after the first crash, multiplied by ``factor`` for every further
    crash in a row, never more than ``maximum``. A service that stayed up for
    ``healthy_after`` seconds has its count of crashes cleared.
    """

    initial: float = 1.0
    factor: float = 2.0
    maximum: float = 60.0
    healthy_after: float = 30.0

    def __post_init__(self) -> None:
        if self.initial <= 0 or self.factor < 1 or self.maximum < self.initial or self.healthy_after <= 0:
            raise ValueError(f"unusable backoff {self!r}")

    def delay(self, crashes: int) -> float:
        """Seconds to wait before the restart that follows ``crashes`` crashes in a row."""
        if crashes <= 0:
            return 0.0
        # Cap the exponent too: factor ** crashes overflows a float long before an operator looks.
        exponent = min(crashes - 1, 64)
        return min(self.maximum, self.initial * self.factor**exponent)


class Service(Protocol):
    """Something the supervisor starts, watches and stops."""

    name: str
    # Services stop from the highest layer down; the database is layer 0.
    layer: int

    def start(self) -> None: ...

    def alive(self) -> bool: ...

    def exit_description(self) -> str: ...

    def after_exit(self) -> None:
        """Clean up what a dead service left behind (orphaned processes) before it starts again."""

    def terminate(self) -> None: ...

    def wait(self, timeout: float) -> bool:
        """True once the service has stopped; False if it still runs after ``timeout`` seconds."""

    def kill(self) -> None: ...

    def pid(self) -> int | None: ...


@dataclass
class _State:
    crashes: int = 0
    started_at: float | None = None
    restart_at: float | None = None


@dataclass
class Supervisor:
    services: Sequence[Service]
    backoff: Backoff = field(default_factory=Backoff)
    clock: Callable[[], float] = time.monotonic
    _states: dict[str, _State] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        names = [service.name for service in self.services]
        if len(set(names)) != len(names):
            raise ValueError(f"service names must be unique: {names}")
        self._states = {name: _State() for name in names}

    def start_all(self) -> None:
        for service in sorted(self.services, key=lambda s: s.layer):
            if not service.alive():
                self._start(service)
            else:
                self._states[service.name].started_at = self.clock()

    def crashes(self, name: str) -> int:
        return self._states[name].crashes

    def restart_at(self, name: str) -> float | None:
        return self._states[name].restart_at

    def tick(self) -> None:
        """One look at every service: note deaths, start what is due, forgive what has stayed up."""
        now = self.clock()
        for service in self.services:
            state = self._states[service.name]
            if state.restart_at is not None:
                if now >= state.restart_at:
                    self._start(service)
                continue
            if service.alive():
                if state.crashes and state.started_at is not None and now - state.started_at >= self.backoff.healthy_after:
                    logger.info("%s has run for %.0f s; its crash count is reset", service.name, now - state.started_at)
                    state.crashes = 0
                continue
            self._crashed(service, service.exit_description())

    def _crashed(self, service: Service, how: str) -> None:
        state = self._states[service.name]
        try:
            service.after_exit()
        except Exception:  # cleanup is best effort; the restart below is what matters
            logger.exception("cleaning up after %s failed", service.name)
        state.crashes += 1
        delay = self.backoff.delay(state.crashes)
        state.restart_at = self.clock() + delay
        state.started_at = None
        logger.error("%s %s (crash %d in a row); starting it again in %.1f s",
                     service.name, how, state.crashes, delay)

    def _start(self, service: Service) -> None:
        state = self._states[service.name]
        state.restart_at = None
        try:
            service.start()
        except Exception as exc:
            self._crashed(service, f"failed to start ({exc.__class__.__name__}: {exc})")
            return
        state.started_at = self.clock()
        pid = service.pid()
        logger.info("%s started%s", service.name, f" (pid {pid})" if pid else "")

    def run(self, should_stop: Callable[[], bool], interval: float = 0.5) -> None:
        while not should_stop():
            self.tick()
            time.sleep(interval)

    def stop_all(self, timeout: float = 30.0) -> None:
        """Stop every service, one layer at a time from the top; kill what outlives ``timeout``."""
        for layer in sorted({s.layer for s in self.services}, reverse=True):
            members = [s for s in self.services if s.layer == layer]
            for service in members:
                self._states[service.name].restart_at = None
                service.terminate()
            deadline = time.monotonic() + timeout
            for service in members:
                if not service.wait(max(0.1, deadline - time.monotonic())):
                    logger.warning("%s did not stop within %.0f s; killing it", service.name, timeout)
                    service.kill()
                    service.wait(5.0)
                logger.info("%s stopped", service.name)


def _describe_returncode(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


class ProcessService:
    """A child process in a session of its own, so its whole process tree can be signalled at once."""

    def __init__(self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                 cwd: Path | str | None = None, layer: int = 1) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.layer = layer
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        # A session of its own: Ctrl-C in the terminal reaches only the supervisor, which stops the
        # children in order, and leftovers of a crashed child can be found by its process group.
        self._process = subprocess.Popen(self.argv, env=self.env, cwd=self.cwd, start_new_session=True)

    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def exit_description(self) -> str:
        if self._process is None or self._process.returncode is None:
            return "is not running"
        return _describe_returncode(self._process.returncode)

    def after_exit(self) -> None:
        # Workers of a gunicorn or Celery parent killed with SIGKILL outlive it, holding the port or
        # tasks; they must go before a new parent starts.
        self._signal_group(signal.SIGKILL)

    def terminate(self) -> None:
        # The parent alone: gunicorn and Celery shut their workers down gracefully on SIGTERM.
        if self.alive():
            assert self._process is not None
            self._process.send_signal(signal.SIGTERM)

    def wait(self, timeout: float) -> bool:
        if self._process is None:
            return True
        try:
            self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        # Whatever the parent left behind (a development server's reloaded child) goes with it.
        self._signal_group(signal.SIGKILL)
        return True

    def kill(self) -> None:
        self._signal_group(signal.SIGKILL)

    def _signal_group(self, signum: int) -> None:
        if self._process is None:
            return
        try:
            os.killpg(self._process.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


class CallbackService:
    """A service that is not our child (the embedded PostgreSQL, daemonised by pg_ctl): we probe it,
    start it and ask it to stop through callables."""

    def __init__(self, name: str, *, start: Callable[[], None], alive: Callable[[], bool],
                 stop: Callable[[], None] | None = None, pid: Callable[[], int | None] = lambda: None,
                 layer: int = 0) -> None:
        self.name = name
        self.layer = layer
        self._start, self._alive, self._stop, self._pid = start, alive, stop, pid

    def start(self) -> None:
        self._start()

    def alive(self) -> bool:
        return self._alive()

    def pid(self) -> int | None:
        return self._pid()

    def exit_description(self) -> str:
        return "is not running"

    def after_exit(self) -> None:
        return None

    def terminate(self) -> None:
        if self._stop is not None:
            self._stop()

    def wait(self, timeout: float) -> bool:
        # The stop callable returns once it is done; there is nothing of ours left to wait for.
        return True

    def kill(self) -> None:
        return None
