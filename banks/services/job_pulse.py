"""A running job's pulse: its heartbeat, phase and progress written from a thread of its own, and its
cancellation enforced even when the job's own code is stuck.

Why a thread with its own database connection:

* the job's connection can be busy for minutes inside one statement (``COPY … TO STDOUT`` streaming an
  export, ``CREATE INDEX CONCURRENTLY``, a vector fill waiting on the embedder): a progress write on that
  connection waits for the statement, and one made while a ``COPY`` streams waits forever. The job notes
  its progress in memory (``job_note``) and the pulse writes it from its own connection;
* a heartbeat only the job's loop writes goes quiet in every phase without a loop, and the sweep then
  declares a healthy job dead. The pulse beats while the worker process lives, and stops with it (a
  killed worker, a lost machine), which is what the sweep must tell apart;
* a cancel an operator asks for is seen by the pulse within one beat. The job's code is told (the next
  ``job_progress``/``job_note``/``job_check`` raises ``JobCancelled``); if it has not ended by itself
  after a grace period, its statement is cancelled and then its backend terminated, which ends its
  transaction and the locks it held, and the row is marked cancelled, so the worker slot comes back.

A job run inside a caller's transaction (tests running tasks eagerly) gets no pulse: another connection
could not see its uncommitted row, and would wait on its row lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, connections
from django.utils import timezone

from banks.models import Job, JobState

logger = logging.getLogger(__name__)


def pulse_seconds() -> float:
    return float(getattr(settings, "MEMORYHUB_JOB_PULSE_SECONDS", 5.0))


def cancel_grace_seconds() -> float:
    return float(getattr(settings, "MEMORYHUB_JOB_CANCEL_GRACE_SECONDS", 5.0))


class JobCancelled(Exception):
    pass


@dataclass
class _Pulse:
    job_id: int
    backend_pid: int | None
    phase: str = ""
    done: int | None = None
    total: int | None = None
    counts: dict[str, int] | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    stopping: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    thread: threading.Thread | None = None
    terminated: bool = False
    cancellable: bool = True

    def take_notes(self) -> dict[str, Any]:
        with self.lock:
            changes: dict[str, Any] = {"heartbeat_at": timezone.now()}
            if self.done is not None:
                changes["progress_done"] = self.done
            if self.total is not None:
                changes["progress_total"] = self.total
            if self.counts is not None:
                changes["counts"] = self.counts
            if self.phase:
                changes["phase"] = self.phase
            return changes


# The pulses of the jobs running in this process, by job id (a prefork child runs one at a time, a
# threaded pool several).
_pulses: dict[int, _Pulse] = {}
_pulses_lock = threading.Lock()
# Jobs whose pulse saw a cancel, kept after the pulse ends so the job's error handler can tell.
_stopped: set[int] = set()


def _pulse_of(job_id: int) -> _Pulse | None:
    with _pulses_lock:
        return _pulses.get(job_id)


def _beat(pulse: _Pulse) -> bool:
    """One beat: write the notes, read the cancel flag. False once the row is no longer running."""
    changes = pulse.take_notes()
    updated = Job.objects.filter(pk=pulse.job_id, state=JobState.RUNNING).update(**changes)
    if not updated:
        return False
    if pulse.cancellable and Job.objects.filter(pk=pulse.job_id, cancel_requested=True).exists():
        pulse.cancelled.set()
    return True


def _end_backend(pulse: _Pulse, function: str) -> None:
    if pulse.backend_pid is None:
        return
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s)", [pulse.backend_pid])  # function: one of two fixed names


def _enforce_cancel(pulse: _Pulse, since: float) -> None:
    """The job was asked to stop at ``since`` and still runs: cancel its statement, then end its session."""
    waited = time.monotonic() - since
    grace = cancel_grace_seconds()
    if waited >= 2 * grace and not pulse.terminated:
        logger.warning("job %s ignored its cancel for %.0f s: terminating its database session", pulse.job_id, waited)
        _end_backend(pulse, "pg_terminate_backend")
        pulse.terminated = True
        Job.objects.filter(pk=pulse.job_id, state=JobState.RUNNING).update(
            state=JobState.CANCELLED, finished_at=timezone.now(),
            message="cancelled by an operator; the work was stopped and its transaction ended")
    elif waited >= grace:
        _end_backend(pulse, "pg_cancel_backend")


def _run(pulse: _Pulse) -> None:
    interval = pulse_seconds()
    cancel_seen_at: float | None = None
    try:
        while not pulse.stopping.wait(interval if cancel_seen_at is None else min(interval, 1.0)):
            try:
                if not pulse.terminated and not _beat(pulse):
                    break
                if pulse.cancelled.is_set():
                    cancel_seen_at = cancel_seen_at or time.monotonic()
                    _enforce_cancel(pulse, cancel_seen_at)
            except Exception:  # a database hiccup must not end the pulse; the next beat tries again
                logger.exception("job %s: heartbeat failed", pulse.job_id)
                connections.close_all()
    finally:
        connections.close_all()  # this thread's own connection


@contextmanager
def job_pulse(job_id: int, *, cancellable: bool = True) -> Iterator[None]:
    """Keep job ``job_id``'s heartbeat (and cancel) going while the block runs.

    ``cancellable=False`` for work that must not stop half way (a bank's deletion): it only beats."""
    if connection.in_atomic_block or _pulse_of(job_id) is not None:
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = int(cursor.fetchone()[0])
    pulse = _Pulse(job_id=job_id, backend_pid=pid, cancellable=cancellable)
    pulse.thread = threading.Thread(target=_run, args=(pulse,), name=f"job-{job_id}-pulse", daemon=True)
    with _pulses_lock:
        _pulses[job_id] = pulse
    pulse.thread.start()
    try:
        yield
    finally:
        pulse.stopping.set()
        pulse.thread.join(timeout=30)
        with _pulses_lock:
            _pulses.pop(job_id, None)
            if pulse.cancelled.is_set():
                _stopped.add(job_id)


def noted_progress(job_id: int) -> dict[str, int]:
    """The progress a running job noted for its pulse and the pulse may not have written yet (a job that
    ends between two beats): its end writes it, so a finished job says how far it really got."""
    pulse = _pulse_of(job_id)
    if pulse is None:
        return {}
    with pulse.lock:
        noted = {"progress_done": pulse.done, "progress_total": pulse.total}
    return {name: value for name, value in noted.items() if value is not None}


def job_was_stopped(job_id: int) -> bool:
    """Whether the job was asked to stop while it ran (its pulse may have cancelled its statement or ended
    its session): then the error it ended with is that, not a failure."""
    with _pulses_lock:
        if job_id in _stopped:
            _stopped.discard(job_id)
            return True
        pulse = _pulses.get(job_id)
    return pulse is not None and pulse.cancelled.is_set()


def job_note(job: Job, *, done: int | None = None, total: int | None = None, phase: str | None = None,
             counts: dict[str, int] | None = None) -> None:
    """Note progress without touching the job's connection (safe while it streams); the pulse writes it.

    Raises JobCancelled once an operator asked to stop. Without a pulse (a job run in a caller's
    transaction) nothing is written until the job's next ``job_progress`` or its end.
    """
    pulse = _pulse_of(job.pk)
    if pulse is None:
        return
    with pulse.lock:
        if done is not None:
            pulse.done = done
        if total is not None:
            pulse.total = total
        if phase is not None:
            pulse.phase = phase
        if counts is not None:
            pulse.counts = counts
    if pulse.cancelled.is_set():
        raise JobCancelled


def job_phase(job: Job, phase: str, *, done: int | None = None, total: int | None = None) -> None:
    """Enter a phase (``loading``, ``filling vectors``, ``building index``…): written now, and beaten after.

    Progress restarts for the phase when ``total`` is given. Raises JobCancelled if asked to stop.
    """
    changes: dict[str, Any] = {"phase": phase[:64], "heartbeat_at": timezone.now()}
    if total is not None:
        changes.update(progress_total=total, progress_done=done or 0)
    Job.objects.filter(pk=job.pk).update(**changes)
    pulse = _pulse_of(job.pk)
    if pulse is not None:
        with pulse.lock:
            pulse.phase = phase[:64]
            if total is not None:
                pulse.done, pulse.total = done or 0, total
    job_check(job)


def job_check(job: Job) -> None:
    """Raise JobCancelled if an operator asked the job to stop (from the pulse's flag, else the row)."""
    pulse = _pulse_of(job.pk)
    if pulse is not None:
        if pulse.cancelled.is_set():
            raise JobCancelled
        return
    if Job.objects.filter(pk=job.pk, cancel_requested=True).exists():
        raise JobCancelled


__all__ = ["JobCancelled", "job_check", "job_note", "job_phase", "job_pulse", "job_was_stopped"]
