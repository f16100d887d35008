"""An API token's row by its prefix, kept by each web process for a few seconds.

Every /v1 request reads its token: a statement and a model built from it, about 0.2 ms of the web
process's CPU and a little of the database's, on requests that otherwise spend a few milliseconds
(docs/benchmarks.md, "Per-process caches"). Only rows are kept, never a verdict: the secret's hash,
revocation and expiry are checked on every request against the kept row, and the minter's standing
(principal_for_token) is read each time. Only found rows are kept, so a token made in another
process works at once.

What another process changes (a revocation there) is seen here within TOKEN_ROW_SECONDS; a
revocation in this process is seen at once (``token_row_forget``, called by ``token_revoke``).
"""

from __future__ import annotations

from banks.models import ApiToken
from banks.models.rows import first_row
from banks.selectors.recall_memo import TtlMemo

# How stale a token's row may be in a process that did not revoke it (the longest a revoked token
# still works there). Tokens change only by being revoked (banks.services.tokens).
TOKEN_ROW_SECONDS = 5.0
_ROWS = TtlMemo(TOKEN_ROW_SECONDS, max_entries=10_000)


def token_row(prefix: str) -> ApiToken | None:
    """The token whose prefix is ``prefix`` (read at most TOKEN_ROW_SECONDS ago), or None.

    The row is shared by this process's requests: read it, do not change it."""
    row: ApiToken | None = _ROWS.get(prefix)
    if row is None:
        row = first_row(ApiToken, "prefix = %s", [prefix])
        if row is not None:
            _ROWS.set(prefix, row)
    return row


def token_row_forget(prefix: str) -> None:
    """Drop the kept row (its token was just changed in this process)."""
    _ROWS.forget(prefix)
