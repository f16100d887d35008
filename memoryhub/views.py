"""Error pages: JSON under /v1 (the API's envelope), HTML for people elsewhere."""

from __future__ import annotations

import sys

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from memoryhub.errors import (
    ServiceUnavailable,
    database_error_as_domain_error,
    error_body,
    json_not_found,
    json_server_error,
)


def is_api_request(request: HttpRequest) -> bool:
    path = request.path
    return (path.startswith(("/v1/", "/health", "/mcp")) or path == "/live"
            or "application/json" in request.headers.get("Accept", ""))


def service_unavailable_page(request: HttpRequest, message: str) -> HttpResponse:
    # Rendered without the request context: its processors (user, messages) need the database.
    from django.template.loader import render_to_string

    return HttpResponse(render_to_string("errors/503.html", {"message": message}), status=503)


def database_unavailable_response(request: HttpRequest, exception: Exception) -> HttpResponse | None:
    """A 503 with Retry-After when ``exception`` says the database cannot be reached, else None."""
    answer = database_error_as_domain_error(exception)
    if not isinstance(answer, ServiceUnavailable):
        return None
    if is_api_request(request):
        response: HttpResponse = JsonResponse(error_body(503, answer.code, answer.message, **answer.extra),
                                              status=503)
    else:
        response = service_unavailable_page(request, answer.message)
    response["Retry-After"] = str(answer.retry_after)
    return response


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if is_api_request(request):
        return json_not_found(request, exception)
    return render(request, "errors/404.html", status=404)


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
    return render(request, "errors/500.html", status=500)
