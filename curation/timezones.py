"""The operator's time zone: kept in the session (no query per page), loaded at login."""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable
from functools import lru_cache

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

SESSION_KEY = "curation_tz"


@lru_cache(maxsize=1)
def zone_names() -> list[str]:
    return sorted(zoneinfo.available_timezones() - {"localtime", "Factory"})


def valid_zone(name: str) -> bool:
    return name in zone_names() or name == "UTC"


def remember_zone(request: HttpRequest, name: str) -> None:
    request.session[SESSION_KEY] = name if valid_zone(name) else "UTC"


def load_zone_on_login(sender: object, request: HttpRequest, user: object, **kwargs: object) -> None:
    from curation.models import OperatorPreference

    pref = OperatorPreference.objects.filter(user_id=getattr(user, "pk", None) or 0).first()  # 0: nobody
    remember_zone(request, pref.time_zone if pref else "UTC")


class OperatorTimezoneMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        session = getattr(request, "session", None)
        name = session.get(SESSION_KEY) if session is not None and not request.path.startswith("/v1/") else None
        if name and name != "UTC" and valid_zone(name):
            timezone.activate(zoneinfo.ZoneInfo(name))
        else:
            timezone.deactivate()
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


def preference_set(*, user: object, time_zone: str) -> None:
    from curation.models import OperatorPreference

    user_pk = getattr(user, "pk", None)
    if user_pk is None:
        raise ValueError("only a signed-in operator has preferences")
    OperatorPreference.objects.update_or_create(user_id=user_pk, defaults={"time_zone": time_zone})
