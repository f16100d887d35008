"""Error pages: JSON under /v1 (the API's envelope), HTML for people elsewhere."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memoryhub.errors import json_not_found, json_server_error


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/v1/") or "application/json" in request.headers.get("Accept", "")


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _is_api(request):
        return json_not_found(request, exception)
    return render(request, "errors/404.html", status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return json_server_error(request)
    return render(request, "errors/500.html", status=500)
