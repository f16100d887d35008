"""Error pages: JSON under /v1 (the API's envelope), HTML in the site layout for people elsewhere."""

from __future__ import annotations

import logging
import sys

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from memoryhub.errors import (
    Conflict,
    MemoryHubError,
    ServiceUnavailable,
    database_error_as_domain_error,
    error_body,
    json_not_found,
    json_server_error,
)

logger = logging.getLogger(__name__)

# What a person sees when even the layout cannot be rendered.
BARE_500 = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Server error · MemoryHub</title>"
            "</head><body><main><h1>Something went wrong</h1><p>The error has been logged. Try again, and if it "
            "persists, tell your administrator.</p><p><a href=\"/\">Back to your banks</a></p></main></body></html>")


def is_api_request(request: HttpRequest) -> bool:
    path = request.path
    return (path.startswith(("/v1/", "/health", "/mcp", "/live")) or path == "/v1"
            or "application/json" in request.headers.get("Accept", ""))


def service_unavailable_page(request: HttpRequest, message: str) -> HttpResponse:
    # Rendered without the request context: its processors (user, messages) need the database.
    from django.template.loader import render_to_string

    return HttpResponse(render_to_string("errors/503.html", {"message": message}), status=503)


def database_unavailable_response(request: HttpRequest, exception: Exception) -> HttpResponse | None:
    """A 503 with Retry-After when ``exception`` says the database cannot be reached, a 409 when a
    concurrent writer won a unique constraint, else None."""
    answer = database_error_as_domain_error(exception)
    if isinstance(answer, Conflict):
        if is_api_request(request):
            return JsonResponse(error_body(409, answer.code, answer.message, **answer.extra), status=409)
        return domain_error(request, answer)
    if not isinstance(answer, ServiceUnavailable):
        return None
    if is_api_request(request):
        response: HttpResponse = JsonResponse(error_body(503, answer.code, answer.message, **answer.extra),
                                              status=503)
    else:
        response = service_unavailable_page(request, answer.message)
    response["Retry-After"] = str(answer.retry_after)
    return response


def _way_back(request: HttpRequest) -> dict[str, str]:
    """The bank the failed page belonged to (its overview), when the path names one."""
    parts = request.path.split("/")
    if len(parts) > 3 and parts[1] == "banks" and parts[2] and parts[3]:
        return {"back_url": f"/banks/{parts[2]}/", "back_label": f"Back to bank {parts[2]}"}
    return {}


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if is_api_request(request):
        return json_not_found(request, exception)
    return render(request, "errors/404.html", _way_back(request), status=404)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if is_api_request(request):
        return JsonResponse(error_body(403, "access_denied", "Access denied"), status=403)
    message = str(exception) if exception and str(exception) else ""
    return render(request, "errors/403.html", {"message": message, **_way_back(request)}, status=403)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if is_api_request(request):
        return JsonResponse(error_body(400, "invalid_request", "Bad request"), status=400)
    return render(request, "errors/400.html", {"message": ""}, status=400)


def domain_error(request: HttpRequest, exc: MemoryHubError) -> HttpResponse:
    """A service refused what an operator page asked, and the page did not handle it itself."""
    if exc.status == 404:
        return not_found(request, exc)
    return render(request, "errors/400.html", {"message": exc.message, **_way_back(request)}, status=exc.status)


def server_error(request: HttpRequest) -> HttpResponse:
    # Django calls this while handling the exception, so it is still at hand: a database that went
    # away during a middleware (sessions, authentication) is a 503 here too.
    exception = sys.exc_info()[1]
    if isinstance(exception, Exception):
        unavailable = database_unavailable_response(request, exception)
        if unavailable is not None:
            return unavailable
    if is_api_request(request):
        return json_server_error(request)
    try:
        return HttpResponse(render_to_string("errors/500.html", _way_back(request), request=request), status=500)
    except Exception:  # the layout needs the session and the user; either may be what failed
        logger.exception("the error page itself failed to render")
        return HttpResponse(BARE_500, status=500)
