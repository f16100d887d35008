"""The operator login's guard: every password check (the operator login page, the admin's) goes
through this backend, which refuses an account or address that is locked out before comparing the
password, and counts each failure (banks.services.login_guard)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest

from banks.services.login_guard import login_failed, login_locked_for


def client_address(request: HttpRequest | None) -> str:
    return (request.META.get("REMOTE_ADDR") or "unknown") if request is not None else "unknown"


class LockoutModelBackend(ModelBackend):
    def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None,
                     **kwargs: Any) -> Any:
        if username is None:
            username = kwargs.get("username") or ""
        if login_locked_for(username=username or "", address=client_address(request)) is not None:
            if request is not None:
                request._login_locked = True  # type: ignore[attr-defined]
            # Stops every backend: Django then reports a failed login (counted and audited below).
            raise PermissionDenied("locked out")
        return super().authenticate(request, username=username, password=password, **kwargs)


def count_failed_login(sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None,
                       **kwargs: Any) -> None:
    login_failed(username=str(credentials.get("username") or ""), address=client_address(request),
                 locked=bool(getattr(request, "_login_locked", False)))


class GuardedAuthenticationForm(AuthenticationForm):
    """The operator login form: a locked-out account or address is told so (and when to try again),
    rather than that the password was wrong. Told for any name, so it reveals no account."""

    locked_out = False

    def clean(self) -> dict[str, Any]:
        try:
            return super().clean()
        except ValidationError:
            if getattr(self.request, "_login_locked", False):
                self.locked_out = True
                raise ValidationError("Too many failed logins: this account or address is locked out for a while. "
                                      "Try again later.", code="locked_out") from None
            raise
