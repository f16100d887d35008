"""Which status codes each /v1 operation answers, for the OpenAPI document.

Kept apart from the schema class so the list can be read (and checked against the generated-request
test in tests/api_fuzz) in one place. Codes every authenticated operation can answer:

- 400 bad input (naming the field), 401 no or bad token, 403 no grant or permission, 404 unknown
  object (another bank's object included);
- 413 a body over ``MEMORYHUB_MAX_REQUEST_BYTES`` (refused before it is read);
- 429 the token's rate limit (``Retry-After`` and ``retry_after``);
- 503 the database or the broker cannot be reached (``Retry-After``), nothing half-done.

Operations with a body add 415 (a body that is not JSON); writes add 409 (a unique id or content taken by a concurrent writer, a stale revision); the
operations that delete add 423 (the bank is under legal hold); the operations that read files add
422 (a path outside the archive roots, an unreadable archive).
"""

from __future__ import annotations

ERROR_TEXTS: dict[int, str] = {
    400: "Bad input, naming the field",
    401: "Missing, unknown or revoked token",
    403: "No grant on the bank, or a missing permission",
    404: "Not found (objects of another bank included)",
    409: "Conflict: a concurrent writer got there first, a stale revision or a duplicate id",
    413: "Body over the size limit (MEMORYHUB_MAX_REQUEST_BYTES)",
    415: "The body is not JSON (Content-Type other than application/json)",
    422: "Understood but cannot be processed: a path outside the archive roots, an unreadable archive",
    423: "Locked: the bank is under legal hold (release it first, or erase for compliance)",
    429: "Rate limited: Retry-After and retry_after say when to try again",
    503: "The database or the broker is unavailable: Retry-After says when to try again",
}

# POSTs that only read: no conflict is possible.
READ_POSTS = frozenset({
    ("RecallApi", "post"), ("DebugRecallApi", "post"), ("HistoryApi", "post"), ("ReflectApi", "post"),
    ("AuditApi", "post"), ("GraphSearchApi", "post"), ("GraphNeighborsApi", "post"),
})

# Work handed to the worker: 202 with the job (or the queued turn).
ACCEPTED = frozenset({("ObservationsConsolidateApi", "post"), ("IngestTurnApi", "post"), ("JobResumeApi", "post"),
                      ("ReextractEntitiesApi", "post")})
# 200 when run inline, 202 with ``"async": true``.
MAYBE_ACCEPTED = frozenset({("ExportApi", "post"), ("ImportApi", "post")})

# Deletes a legal hold refuses.
HELD = frozenset({("ForgetApi", "post"), ("BankApi", "delete"), ("ToolApi", "post")})

UNPROCESSABLE = frozenset({("ExportApi", "post"), ("ImportApi", "post"), ("JobResumeApi", "post"),
                           ("ToolApi", "post")})


def success_codes(key: tuple[str, str]) -> list[int]:
    if key in ACCEPTED:
        return [202]
    if key in MAYBE_ACCEPTED:
        return [200, 202]
    return [200]


def error_codes(key: tuple[str, str], *, has_body: bool = False) -> list[int]:
    codes = [400, 401, 403, 404, 413, 429, 503]
    if has_body:
        codes.append(415)
    if key[1] != "get" and key not in READ_POSTS:
        codes.append(409)
    if key in UNPROCESSABLE:
        codes.append(422)
    if key in HELD:
        codes.append(423)
    return sorted(codes)
