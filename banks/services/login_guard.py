"""Operator logins: failed passwords counted per account and per client address, the account (or
address) locked out for a while once too many fail, every failure and lockout audited.

Counted on the rate-limit table (banks.services.rate_limits): a failure adds one to the account's
and the address's windows; reaching MEMORYHUB_LOGIN_MAX_FAILURES (per account) or
MEMORYHUB_LOGIN_MAX_FAILURES_PER_ADDRESS within MEMORYHUB_LOGIN_FAILURE_WINDOW seconds opens a
lockout window of MEMORYHUB_LOGIN_LOCKOUT_SECONDS, during which even the right password is refused.
"""

from __future__ import annotations

import hashlib

from django.conf import settings

from banks.services.audit import audit_record
from banks.services.rate_limits import rate_count, rate_peek


def _key(kind: str, value: str) -> str:
    # Hashed: a user name or address of any length fits the key column, and the table holds no names.
    return f"login-{kind}:{hashlib.sha256(value.strip().lower().encode()).hexdigest()}"


def login_locked_for(*, username: str, address: str) -> float | None:
    """Seconds left of the lockout of this account or address, or None when a login may be tried."""
    lockout = settings.MEMORYHUB_LOGIN_LOCKOUT_SECONDS
    left = [counted.resets_in for counted in (rate_peek(key=_key("lock", username), period=lockout),
                                              rate_peek(key=_key("lock-address", address), period=lockout))
            if counted is not None]
    return max(left) if left else None


def login_failed(*, username: str, address: str, locked: bool) -> None:
    """Count one failed login; lock the account or address out when it reaches its limit. Audited."""
    window = settings.MEMORYHUB_LOGIN_FAILURE_WINDOW
    by_account = rate_count(key=_key("fail", username), period=window)
    by_address = rate_count(key=_key("fail-address", address), period=window)
    locks = []
    if not locked:
        if by_account is not None and by_account.count >= settings.MEMORYHUB_LOGIN_MAX_FAILURES:
            locks.append(("lock", username, "account"))
        if by_address is not None and by_address.count >= settings.MEMORYHUB_LOGIN_MAX_FAILURES_PER_ADDRESS:
            locks.append(("lock-address", address, "address"))
    details = {"address": address, "failures": by_account.count if by_account else None, "locked_out": locked}
    audit_record(actor=f"login:{username[:150]}", action="operator.login_failed", details=details)
    for kind, value, what in locks:
        # A fresh lockout window (a lock already open keeps its end: rate_count only adds to it).
        rate_count(key=_key(kind, value), period=settings.MEMORYHUB_LOGIN_LOCKOUT_SECONDS)
        audit_record(actor=f"login:{username[:150]}", action="operator.locked_out",
                     details={"address": address, "what": what,
                              "seconds": settings.MEMORYHUB_LOGIN_LOCKOUT_SECONDS})


__all__ = ["login_failed", "login_locked_for"]
