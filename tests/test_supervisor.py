"""The restart policy of config.supervisor, on fake services and a fake clock (no processes)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time

import pytest

from config.supervisor import Backoff, CallbackService, ProcessService, Supervisor
from tests.live_process import pid_running


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakeService:
    def __init__(self, name: str, layer: int = 1, fail_starts: int = 0) -> None:
        self.name, self.layer = name, layer
        self.running = False
        self.starts = 0
        self.fail_starts = fail_starts
        self.cleanups = 0
        self.events: list[str] = []

    def start(self) -> None:
        self.starts += 1
        if self.fail_starts:
            self.fail_starts -= 1
            raise OSError("port in use")
        self.running = True

    def alive(self) -> bool:
        return self.running

    def exit_description(self) -> str:
        return "was killed by SIGKILL"

    def after_exit(self) -> None:
        self.cleanups += 1

    def terminate(self) -> None:
        self.events.append(f"terminate {self.name}")
        self.running = False

    def wait(self, timeout: float) -> bool:
        return not self.running

    def kill(self) -> None:
        self.running = False

    def pid(self) -> int | None:
        return 4242 if self.running else None

    def crash(self) -> None:
        self.running = False


def test_backoff_doubles_from_initial_up_to_the_maximum():
    backoff = Backoff(initial=1.0, factor=2.0, maximum=60.0)
    assert [backoff.delay(n) for n in range(0, 9)] == [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    assert backoff.delay(10_000) == 60.0  # no overflow after a very long crash loop


def test_backoff_refuses_settings_that_would_spin_or_never_restart():
    for bad in ({"initial": 0}, {"factor": 0.5}, {"initial": 10, "maximum": 5}, {"healthy_after": 0}):
        with pytest.raises(ValueError):
            Backoff(**bad)


def make(services, **backoff):  # noqa: ANN001, ANN003, ANN201
    clock = FakeClock()
    return Supervisor(services, backoff=Backoff(**backoff), clock=clock), clock


def test_a_crashed_service_waits_its_backoff_then_starts_again(caplog):
    web = FakeService("web")
    supervisor, clock = make([web], initial=1.0, maximum=8.0, healthy_after=30.0)
    supervisor.start_all()
    assert web.starts == 1

    web.crash()
    with caplog.at_level(logging.ERROR, logger="config.supervisor"):
        supervisor.tick()
    assert "web was killed by SIGKILL (crash 1 in a row); starting it again in 1.0 s" in caplog.text
    assert web.cleanups == 1 and web.starts == 1
    clock.advance(0.5)
    supervisor.tick()
    assert web.starts == 1  # not before its delay
    clock.advance(0.5)
    supervisor.tick()
    assert web.starts == 2 and web.alive()


def test_crashes_in_a_row_grow_the_delay_and_a_healthy_run_resets_it():
    worker = FakeService("worker")
    supervisor, clock = make([worker], initial=1.0, maximum=4.0, healthy_after=30.0)
    supervisor.start_all()
    delays = []
    for _ in range(4):
        worker.crash()
        supervisor.tick()
        delays.append(supervisor.restart_at("worker") - clock())
        clock.advance(delays[-1])
        supervisor.tick()
        clock.advance(1.0)  # dies again soon after starting
    assert delays == [1.0, 2.0, 4.0, 4.0]
    assert supervisor.crashes("worker") == 4

    clock.advance(30.0)
    supervisor.tick()
    assert supervisor.crashes("worker") == 0
    worker.crash()
    supervisor.tick()
    assert supervisor.restart_at("worker") - clock() == 1.0


def test_a_start_that_fails_counts_as_a_crash_and_is_retried():
    db = FakeService("postgresql", layer=0, fail_starts=2)
    supervisor, clock = make([db], initial=1.0, maximum=60.0)
    supervisor.start_all()
    assert supervisor.crashes("postgresql") == 1 and not db.alive()
    clock.advance(1.0)
    supervisor.tick()
    assert supervisor.crashes("postgresql") == 2
    clock.advance(2.0)
    supervisor.tick()
    assert db.alive() and db.starts == 3


def test_one_crashing_service_leaves_the_others_alone():
    web, worker = FakeService("web"), FakeService("worker")
    supervisor, clock = make([worker, web])
    supervisor.start_all()
    web.crash()
    supervisor.tick()
    assert worker.alive() and worker.starts == 1 and supervisor.crashes("worker") == 0


def test_start_all_starts_the_database_first_and_stop_all_stops_it_last():
    order: list[str] = []
    db = FakeService("postgresql", layer=0)
    web = FakeService("web")
    db.start = lambda: (order.append("start postgresql"), setattr(db, "running", True))  # type: ignore[method-assign]
    web.start = lambda: (order.append("start web"), setattr(web, "running", True))  # type: ignore[method-assign]
    web.events = db.events = order
    supervisor, _ = make([web, db])
    supervisor.start_all()
    supervisor.stop_all(timeout=1.0)
    assert order == ["start postgresql", "start web", "terminate web", "terminate postgresql"]


def test_an_already_running_service_is_adopted_not_started_twice():
    db = FakeService("postgresql", layer=0)
    db.running = True
    supervisor, _ = make([db])
    supervisor.start_all()
    assert db.starts == 0


def test_names_must_be_unique():
    with pytest.raises(ValueError, match="unique"):
        Supervisor([FakeService("web"), FakeService("web")])


def test_callback_service_delegates_to_its_callables():
    calls: list[str] = []
    service = CallbackService("postgresql", start=lambda: calls.append("start"), alive=lambda: False,
                              stop=lambda: calls.append("stop"))
    service.start()
    service.terminate()
    assert calls == ["start", "stop"] and service.wait(1.0) and not service.alive()


def test_process_service_reports_how_a_child_died_and_sweeps_its_group(tmp_path):
    # A parent that leaves a grandchild behind when it is killed, as gunicorn's workers would be.
    marker = tmp_path / "grandchild.pid"
    script = (f"import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
              f"open({str(marker)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    service = ProcessService("child", [sys.executable, "-c", script])
    service.start()
    deadline = time.monotonic() + 20
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    grandchild = int(marker.read_text())
    os.kill(service.pid(), signal.SIGKILL)
    while service.alive():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert service.exit_description() == "was killed by SIGKILL"
    assert pid_running(grandchild)  # orphaned, as a crashed gunicorn master's workers are
    service.after_exit()
    # The grandchild was in the child's process group: gone too (reaped by init, so poll /proc).
    deadline = time.monotonic() + 10
    while pid_running(grandchild):
        assert time.monotonic() < deadline, "grandchild outlived its process group"
        time.sleep(0.05)


def test_process_service_stops_its_child_with_sigterm():
    service = ProcessService("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"])
    service.start()
    assert service.alive() and service.pid()
    service.terminate()
    assert service.wait(10.0)
    assert service.exit_description() == "was killed by SIGTERM"
    assert not service.alive()


def test_process_service_exit_status():
    service = ProcessService("false", [sys.executable, "-c", "raise SystemExit(3)"])
    service.start()
    service.wait(10.0)
    assert service.exit_description() == "exited with status 3"
