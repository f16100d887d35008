"""Reads that may lag behind the primary go to a read replica, when one is configured.

``DATABASE_REPLICA_URL`` adds a database alias ``replica`` (a streaming replica of the primary).
Only code that marks itself as tolerating lag reads from it: recall (``lagging_reads``) and the
raw-SQL recall code through ``read_connection()``. Everything else (writes, curation after a save,
retain's duplicate check) reads the primary, as does everything when no replica is configured.

A replica that cannot be reached is not an outage: the read that met it runs again on the primary
(``tolerates_lag``), and this process reads the primary for ``REPLICA_RETRY_SECONDS`` before it tries
the replica again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import wraps
from typing import Any, ParamSpec, TypeVar

from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

REPLICA_ALIAS = "replica"
# Apps whose rows a lagging read may come from; the cache table, sessions and users stay primary.
ROUTED_APPS = frozenset({"banks"})

REPLICA_RETRY_SECONDS = 30.0

logger = logging.getLogger(__name__)
_lag_tolerated: ContextVar[bool] = ContextVar("memoryhub_lag_tolerated", default=False)
# Until when (time.monotonic()) this process reads the primary because the replica did not answer.
_replica_down_until = 0.0

P = ParamSpec("P")
R = TypeVar("R")


def replica_configured() -> bool:
    return REPLICA_ALIAS in connections.settings


def replica_in_use() -> bool:
    """A replica is configured and not set aside after a failure."""
    return replica_configured() and time.monotonic() >= _replica_down_until


def _replica_answers() -> bool:
    replica = connections[REPLICA_ALIAS]
    try:
        replica.close_if_unusable_or_obsolete()
        replica.ensure_connection()
        return replica.is_usable()
    except (OperationalError, InterfaceError):
        return False


def _set_replica_aside(exc: BaseException) -> None:
    global _replica_down_until  # noqa: PLW0603  (one flag per process, on purpose)
    _replica_down_until = time.monotonic() + REPLICA_RETRY_SECONDS
    try:
        connections[REPLICA_ALIAS].close()
    except (OperationalError, InterfaceError):
        pass
    logger.warning("read replica unreachable (%s); reading the primary for %.0f s", exc, REPLICA_RETRY_SECONDS)


@contextmanager
def lagging_reads() -> Iterator[None]:
    """Inside this block, reads of bank data may come from the replica (seconds behind at most)."""
    token = _lag_tolerated.set(True)
    try:
        yield
    finally:
        _lag_tolerated.reset(token)


def tolerates_lag(func: Callable[P, R]) -> Callable[P, R]:
    """Decorator form of ``lagging_reads`` for read-only selectors."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        on_replica = replica_in_use()
        try:
            with lagging_reads():
                return func(*args, **kwargs)
        except (OperationalError, InterfaceError) as exc:
            # The primary's own failures go up as they are (a 503); only a dead replica is stepped around.
            if not on_replica or _replica_answers():
                raise
            _set_replica_aside(exc)
        return func(*args, **kwargs)

    return wrapper


def read_alias() -> str:
    return REPLICA_ALIAS if _lag_tolerated.get() and replica_in_use() else DEFAULT_DB_ALIAS


def read_connection() -> BaseDatabaseWrapper:
    """The connection raw-SQL reads should use: the replica inside ``lagging_reads``, else the primary."""
    return connections[read_alias()]


class ReplicaRouter:
    """Lag-tolerant reads of bank data to the replica; every write (and every other read) to the primary."""

    def db_for_read(self, model: type[Any], **hints: Any) -> str | None:
        if model._meta.app_label in ROUTED_APPS and _lag_tolerated.get() and replica_in_use():
            return REPLICA_ALIAS
        return None

    def db_for_write(self, model: type[Any], **hints: Any) -> str:
        # Explicit: a row read from the replica must still be saved on the primary.
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # the replica holds the primary's very rows

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> None:
        # No opinion: a streaming replica receives the schema from the primary, and
        # `migrate` only touches the alias it is given (the primary unless told otherwise).
        return None
