"""Rate-limit counting that adds up exactly across web processes and threads.

Each identity (a token) has a window that starts at its first request and lasts the rate's period;
every request adds one in a single atomic step and reads back the count and the seconds left, so
two requests at the same moment can never both see the same count (a read-then-write would).

- With Redis (``MEMORYHUB_CACHE_URL``): ``SET key 0 EX period NX``, ``INCR key`` and ``PTTL key`` in
  one MULTI/EXEC transaction.
- Otherwise the database: one ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING`` on
  ``memoryhub_rate_counter``, the row lock serialising concurrent requests of one token only, and
  the database clock deciding when a window ends (web processes' clocks never disagree about it).

A Redis that cannot be reached lets the request through (logged): the limit protects the service,
refusing every caller because its counter is away would be the outage it exists to prevent.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection

from banks.models import RateCounter
from memoryhub.postgres.prepared import execute_prepared

logger = logging.getLogger(__name__)

_UPSERT = f"""
    INSERT INTO {RateCounter._meta.db_table} AS c (key, started, count) VALUES (%(key)s, now(), 1)
    ON CONFLICT (key) DO UPDATE SET
        count = CASE WHEN c.started > now() - make_interval(secs => %(period)s) THEN c.count + 1 ELSE 1 END,
        started = CASE WHEN c.started > now() - make_interval(secs => %(period)s) THEN c.started ELSE now() END
    RETURNING c.count, EXTRACT(EPOCH FROM c.started + make_interval(secs => %(period)s) - now())
"""  # noqa: S608  (the table name is our model's; values are parameters)


@dataclass(frozen=True)
class RateCount:
    count: int  # requests in the current window, this one included
    resets_in: float  # seconds until the window ends


def rate_count(*, key: str, period: int) -> RateCount | None:
    """Count one request of ``key`` in its window of ``period`` seconds (None: could not count)."""
    if settings.MEMORYHUB_CACHE_URL:
        return _redis_count(settings.MEMORYHUB_CACHE_URL, key, period)
    with connection.cursor() as cursor:
        execute_prepared(cursor, _UPSERT, {"key": key, "period": period})
        count, resets_in = cursor.fetchone()
    return RateCount(count=int(count), resets_in=max(0.0, float(resets_in)))


_PEEK = f"""
    SELECT count, EXTRACT(EPOCH FROM started + make_interval(secs => %(period)s) - now())
    FROM {RateCounter._meta.db_table} WHERE key = %(key)s AND started > now() - make_interval(secs => %(period)s)
"""  # noqa: S608


def rate_peek(*, key: str, period: int) -> RateCount | None:
    """The count of ``key``'s current window without adding to it (None: no window open, or Redis away)."""
    if settings.MEMORYHUB_CACHE_URL:
        import redis

        try:
            with _redis(settings.MEMORYHUB_CACHE_URL).pipeline(transaction=True) as pipe:
                pipe.get(f"memoryhub:rate:{key}")
                pipe.pttl(f"memoryhub:rate:{key}")
                count, ttl_ms = pipe.execute()
        except redis.RedisError as exc:
            logger.error("rate limit not read, Redis unavailable: %s", exc)
            return None
        return RateCount(count=int(count), resets_in=max(ttl_ms, 0) / 1000) if count is not None else None
    with connection.cursor() as cursor:
        cursor.execute(_PEEK, {"key": key, "period": period})
        row = cursor.fetchone()
    return RateCount(count=int(row[0]), resets_in=max(0.0, float(row[1]))) if row else None


_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def _redis(url: str) -> Any:
    """One client per URL and process. Made under a lock: a second client made by a thread that lost a
    race would be dropped, and a dropped client closes the connections its pipelines are using."""
    with _clients_lock:
        if url not in _clients:
            import redis

            _clients[url] = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        return _clients[url]


def _redis_count(url: str, key: str, period: int) -> RateCount | None:
    import redis

    name = f"memoryhub:rate:{key}"
    try:
        with _redis(url).pipeline(transaction=True) as pipe:
            pipe.set(name, 0, ex=period, nx=True)
            pipe.incr(name)
            pipe.pttl(name)
            _, count, ttl_ms = pipe.execute()
            if ttl_ms < 0:  # a key left without expiry (never by us): give it one
                pipe.expire(name, period)
                pipe.execute()
                ttl_ms = period * 1000
    except redis.RedisError as exc:
        logger.error("rate limit not counted, Redis unavailable: %s", exc)
        return None
    return RateCount(count=int(count), resets_in=ttl_ms / 1000)
