"""Reads that may lag behind the primary go to a read replica, when one is configured.

``DATABASE_REPLICA_URL`` adds a database alias ``replica`` (a streaming replica of the primary).
Only code that marks itself as tolerating lag reads from it: recall (``lagging_reads``) and the
raw-SQL recall code through ``read_connection()``. Everything else (writes, curation after a save,
retain's duplicate check) reads the primary, as does everything when no replica is configured.

A replica that cannot be reached is not an outage: the read that met it runs again on the primary
(``tolerates_lag``), and this process reads the primary for ``REPLICA_RETRY_SECONDS`` before it tries
the replica again.

A replica is read only while it is close enough, as measured on the replica itself (``replica_position``):
no further behind than ``MEMORYHUB_REPLICA_MAX_LAG`` seconds, and, for a read of one bank, past the WAL
position of that bank's latest committed write (``note_bank_write``, called by the audit log, which
every write goes through). A client that retains and then recalls therefore reads its own write, on
whichever process either request lands: the positions are kept in the shared cache.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import wraps
from typing import Any, ParamSpec, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

REPLICA_ALIAS = "replica"
# Apps whose rows a lagging read may come from; the cache table, sessions and users stay primary.
ROUTED_APPS = frozenset({"banks"})

REPLICA_RETRY_SECONDS = 30.0

logger = logging.getLogger(__name__)
# The alias lag-tolerant reads use inside ``lagging_reads`` (chosen once per block); None outside one.
_read_alias: ContextVar[str | None] = ContextVar("memoryhub_read_alias", default=None)
# Until when (time.monotonic()) this process reads the primary because the replica did not answer.
_replica_down_until = 0.0
WRITTEN_KEY = "memoryhub:replica:written:{}"

# On the replica. A standby that has replayed all it received while its WAL receiver runs is caught up,
# whatever the age of its last replayed commit (an idle primary commits nothing); otherwise its lag is
# the age of the last commit it replayed (infinite before the first). A copy that is not in recovery
# (a database restored elsewhere, say) has no position and is taken as current.
_POSITION_SQL = """
SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text,
       CASE WHEN NOT pg_is_in_recovery() THEN 0::float8
            WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn()
                 AND EXISTS (SELECT FROM pg_stat_wal_receiver) THEN 0::float8
            ELSE COALESCE(EXTRACT(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8,
                          'Infinity'::float8)
       END
"""


@dataclass(frozen=True)
class ReplicaPosition:
    standby: bool  # a streaming standby (in recovery), whose replay position means something
    replay_lsn: int  # bytes into the WAL; 0 when unknown
    lag_seconds: float


_position: tuple[float, ReplicaPosition] | None = None  # (time.monotonic() measured, position)

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


def lsn_bytes(lsn: str | None) -> int:
    """``'16/B374D848'`` as a number of bytes (0 for None), so positions compare."""
    if not lsn:
        return 0
    high, low = lsn.split("/")
    return (int(high, 16) << 32) + int(low, 16)


def replica_position(*, fresh: bool = False) -> ReplicaPosition:
    """Where the replica stands, measured at most ``MEMORYHUB_REPLICA_CHECK_SECONDS`` ago (unless
    ``fresh``). Raises the replica's OperationalError if it does not answer."""
    global _position  # noqa: PLW0603  (one measure per process, shared by its threads on purpose)
    now = time.monotonic()
    if not fresh and _position is not None and now - _position[0] < settings.MEMORYHUB_REPLICA_CHECK_SECONDS:
        return _position[1]
    with connections[REPLICA_ALIAS].cursor() as cursor:
        cursor.execute(_POSITION_SQL)
        standby, replay_lsn, lag = cursor.fetchone()
    position = ReplicaPosition(standby=bool(standby), replay_lsn=lsn_bytes(replay_lsn), lag_seconds=float(lag))
    _position = (now, position)
    return position


def note_bank_write(bank_pk: int) -> None:
    """Remember, once the current transaction commits, the primary's WAL position as this bank's
    latest write: a lagging read of the bank then waits for the replica to pass it or reads the primary."""
    if not replica_configured():
        return

    def remember() -> None:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
            (lsn,) = cursor.fetchone()
        # Kept well past the lag bound: a replica within the bound has replayed anything older.
        timeout = max(60.0, 10 * settings.MEMORYHUB_REPLICA_MAX_LAG)
        cache.set(WRITTEN_KEY.format(bank_pk), lsn_bytes(lsn), timeout=timeout)

    transaction.on_commit(remember, using=DEFAULT_DB_ALIAS)


def _replica_serves(bank_pk: int | None) -> bool:
    """Whether a lag-tolerant read (of ``bank_pk``, if given) may go to the replica now."""
    if not replica_in_use():
        return False
    written = cache.get(WRITTEN_KEY.format(bank_pk)) if bank_pk is not None else None
    try:
        position = replica_position()
        if position.standby and written is not None and position.replay_lsn < written:
            position = replica_position(fresh=True)  # the measure may predate the write
            if position.replay_lsn < written:
                return False  # the bank's own latest write is not there yet: read it on the primary
        return position.lag_seconds <= settings.MEMORYHUB_REPLICA_MAX_LAG
    except (OperationalError, InterfaceError) as exc:
        _set_replica_aside(exc)
        return False


def _set_replica_aside(exc: BaseException) -> None:
    global _replica_down_until, _position  # noqa: PLW0603  (one flag per process, on purpose)
    _replica_down_until = time.monotonic() + REPLICA_RETRY_SECONDS
    _position = None
    try:
        connections[REPLICA_ALIAS].close()
    except (OperationalError, InterfaceError):
        pass
    logger.warning("read replica unreachable (%s); reading the primary for %.0f s", exc, REPLICA_RETRY_SECONDS)


@contextmanager
def lagging_reads(bank_pk: int | None = None) -> Iterator[str]:
    """Inside this block, reads of bank data may come from the replica (``MEMORYHUB_REPLICA_MAX_LAG``
    behind at most; past bank ``bank_pk``'s latest write when given). The choice is made once, on
    entry, so one read never mixes the two databases; the block is given the alias chosen."""
    alias = REPLICA_ALIAS if _replica_serves(bank_pk) else DEFAULT_DB_ALIAS
    token = _read_alias.set(alias)
    try:
        yield alias
    finally:
        _read_alias.reset(token)


def _bank_pk(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    bank = kwargs.get("bank", args[0] if args else None)
    pk = getattr(bank, "pk", None)
    return pk if isinstance(pk, int) else None


def tolerates_lag(func: Callable[P, R]) -> Callable[P, R]:
    """Decorator form of ``lagging_reads`` for read-only selectors of one bank (``bank``, first
    argument or keyword, names it for read-your-writes)."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        on_replica = False
        try:
            with lagging_reads(_bank_pk(args, kwargs)) as alias:
                on_replica = alias == REPLICA_ALIAS
                return func(*args, **kwargs)
        except (OperationalError, InterfaceError) as exc:
            # The primary's own failures go up as they are (a 503); only a dead replica is stepped around.
            if not on_replica or _replica_answers():
                raise
            _set_replica_aside(exc)
        return func(*args, **kwargs)

    return wrapper


def read_alias() -> str:
    return REPLICA_ALIAS if _read_alias.get() == REPLICA_ALIAS and replica_in_use() else DEFAULT_DB_ALIAS


def read_connection() -> BaseDatabaseWrapper:
    """The connection raw-SQL reads should use: the replica inside ``lagging_reads``, else the primary."""
    return connections[read_alias()]


class ReplicaRouter:
    """Lag-tolerant reads of bank data to the replica; every write (and every other read) to the primary."""

    def db_for_read(self, model: type[Any], **hints: Any) -> str | None:
        if model._meta.app_label in ROUTED_APPS and read_alias() == REPLICA_ALIAS:
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
