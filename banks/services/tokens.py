"""API tokens: the secret is shown once at creation and only its SHA-256 hash is kept."""

from __future__ import annotations

import re
import secrets
from datetime import datetime
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from banks.access import Principal, normalise_permissions
from banks.models import ApiToken
from banks.selectors.token_rows import token_row_forget
from banks.services.audit import audit_record
from banks.token_format import hash_secret, token_plaintext
from memoryhub.errors import AccessDenied, InvalidInput

PRINCIPAL_TYPES = ("user", "agent", "service")
_PRINCIPAL = re.compile(r"^(user|agent|service):[^\s:][^\s]{0,190}$")


def normalise_principal(value: str | None) -> str:
    """Astrocyte's principal form ``<type>:<id>``; a bare id is a user (Astrocyte's parse_principal)."""
    value = (value or "").strip()
    if not value:
        return ""
    if ":" not in value:
        value = f"user:{value}"
    if not _PRINCIPAL.match(value):
        raise InvalidInput(f"must be {'|'.join(PRINCIPAL_TYPES)}:<id> without spaces", field="principal")
    return value


def normalise_grants(grants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not grants:
        raise InvalidInput("a token needs at least one bank grant", field="grants")
    cleaned = []
    for grant in grants:
        pattern = str(grant.get("bank", "")).strip()
        if not pattern or len(pattern) > 255:
            raise InvalidInput("each grant needs a bank id or pattern (e.g. user-* )", field="grants")
        perms = normalise_permissions(list(grant.get("permissions", [])))
        if not perms:
            raise InvalidInput(f"grant for {pattern!r} lists no permission", field="permissions")
        cleaned.append({"bank": pattern, "permissions": sorted(perms)})
    return cleaned


# Handing out access to a bank needs at least this permission there (the curator role has it).
MINTING_PERMISSION = "write"


def check_mintable(by: Principal, grants: list[dict[str, Any]]) -> None:
    """An operator grants only what they hold, on banks named one by one (patterns such as ``user-*``
    are for administrators) where they may write. The token keeps that ceiling for life
    (banks.access.principal_for_token)."""
    if by.is_superuser:
        return
    for grant in grants:
        pattern, perms = grant["bank"], set(grant["permissions"])
        held = by.permissions_for(pattern)
        if any(ch in pattern for ch in "*?[") or MINTING_PERMISSION not in held or not perms <= held:
            raise AccessDenied(by.label, ",".join(sorted(perms - held)) or MINTING_PERMISSION, pattern)


def token_create(
    *, name: str, grants: list[dict[str, Any]], actor: str, expires_at: datetime | None = None,
    created_by: Any = None, principal: str | None = None, by: Principal | None = None,
) -> tuple[ApiToken, str]:
    """Returns the token row and the plaintext secret, which is never stored or shown again. ``by``: the
    operator minting it (None: the server's own authority, e.g. ``create_api_token``)."""
    name = name.strip()
    if not name:
        raise InvalidInput("a token needs a name", field="name")
    cleaned = normalise_grants(grants)
    if by is not None:
        check_mintable(by, cleaned)
    principal = normalise_principal(principal)
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidInput("must be in the future", field="expires_at")
    prefix = secrets.token_hex(4)
    while ApiToken.objects.filter(prefix=prefix).exists():
        prefix = secrets.token_hex(4)
    plaintext = token_plaintext(prefix)
    token = ApiToken.objects.create(name=name, prefix=prefix, secret_hash=hash_secret(plaintext), grants=cleaned,
                                    expires_at=expires_at, created_by=created_by, principal=principal)
    audit_record(actor=actor, action="token.create", target_ids=[prefix],
                 details={"name": name, "grants": cleaned, "principal": principal or None})
    return token, plaintext


def token_revoke(*, token: ApiToken, actor: str, reason: str = "", by: Principal | None = None) -> ApiToken:
    """``by`` revokes a token it minted; only a superuser (or the server) revokes anyone's."""
    if by is not None and not by.is_superuser and (by.user_id is None or token.created_by_id != by.user_id):
        raise AccessDenied(by.label, "revoke", f"token {token.prefix}")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        # Now, and again once committed: a request of this process reading the row meanwhile kept the old one.
        token_row_forget(token.prefix)
        transaction.on_commit(partial(token_row_forget, token.prefix))
        audit_record(actor=actor, action="token.revoke", target_ids=[token.prefix], reason=reason,
                     details={"name": token.name})
    return token
