from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from io import BytesIO

from django.core.handlers.wsgi import LimitedStream
from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse

from memoryhub.liveness import streamed
from memoryhub.logs import request_id_scope

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

# No inline scripts or styles anywhere: htmx and our own JS come from /static/. The one hash allowed
# is that of the empty string: htmx sets an empty style while swapping, which can carry nothing.
EMPTY_STYLE_HASH = "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
CONTENT_SECURITY_POLICY = (
    f"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-hashes' {EMPTY_STYLE_HASH}; "
    "img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"
)


class RequestIdMiddleware:
    """Echo a well-formed incoming X-Request-ID, else mint one (as Astrocyte's gateway does)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get("X-Request-ID", "")
        request_id = incoming if _REQUEST_ID.match(incoming) else uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]
        with request_id_scope(request_id):  # every log line of the request carries it (memoryhub.logs)
            response = self.get_response(request)
        response["X-Request-ID"] = request_id
        return response


class StreamingLivenessMiddleware:
    """A streamed response (archive download, audit CSV) beats as it sends, so a web worker is not
    replaced for a transfer that outlasts the request timeout while still moving (memoryhub.liveness).
    Files keep their own path: wrapping them would lose the server's sendfile."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if isinstance(response, StreamingHttpResponse) and not isinstance(response, FileResponse) \
                and not response.is_async:
            response.streaming_content = streamed(response.streaming_content)
        return response


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.setdefault("Referrer-Policy", "same-origin")
        return response


class BodySizeLimitMiddleware:
    """Refuse an API body over MEMORYHUB_MAX_REQUEST_BYTES before anything reads it (413)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from django.conf import settings

        from memoryhub.errors import error_body

        if _chunked_without_length(request):
            refused = _read_chunked(request, settings.MEMORYHUB_MAX_REQUEST_BYTES)
            if refused is not None:
                return refused
        if request.path.startswith("/v1/"):
            raw = request.META.get("CONTENT_LENGTH") or "0"
            try:
                length = int(raw)
            except ValueError:
                return JsonResponse(error_body(400, "invalid_request", "Invalid Content-Length"), status=400)
            limit = settings.MEMORYHUB_MAX_REQUEST_BYTES
            if limit and length > limit:
                return JsonResponse(
                    error_body(413, "request_too_large", f"Request body too large (limit {limit} bytes)"), status=413
                )
        return self.get_response(request)


def _chunked_without_length(request: HttpRequest) -> bool:
    return ("chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
            and not request.META.get("CONTENT_LENGTH") and "wsgi.input" in request.META)


def _read_chunked(request: HttpRequest, limit: int) -> HttpResponse | None:
    """A chunked body carries no Content-Length, and Django reads a body by its Content-Length: left
    alone, it would be read as empty. Where the server has decoded the chunks and ends the stream
    (``wsgi.input_terminated``, as gunicorn does) an API body is read here, up to the request cap, and
    given its length; anywhere else (or on a page, where browsers always send a length) it is a 411."""
    from memoryhub.errors import error_body

    if not request.path.startswith("/v1/") or not request.META.get("wsgi.input_terminated"):
        return JsonResponse(error_body(411, "length_required", "Send the body with a Content-Length header"),
                            status=411)
    stream = request.META["wsgi.input"]
    body = stream.read(limit + 1) if limit else stream.read()
    if limit and len(body) > limit:
        return JsonResponse(error_body(413, "request_too_large", f"Request body too large (limit {limit} bytes)"),
                            status=413)
    request.META["CONTENT_LENGTH"] = str(len(body))
    request.META["wsgi.input"] = BytesIO(body)
    request._stream = LimitedStream(BytesIO(body), len(body))  # type: ignore[assignment]
    return None


# Control characters (NUL included) have no place in a URL's path or query; the database refuses
# NUL in a text value, so they must never reach a lookup.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class UrlCharactersMiddleware:
    """An operator page whose URL path or query holds a control character (``%00`` included) is a 400
    page, never a 500 from a lookup the database cannot run."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from memoryhub.views import is_api_request

        # The API checks its own: each path and query value is judged by the operation's model, which
        # names the field (and the documented status) itself.
        if not is_api_request(request) and (_CONTROL.search(request.path) or _query_has_control(request)):
            from django.shortcuts import render

            message = "The address holds a character that is not allowed (a control character such as NUL)."
            return render(request, "errors/400.html", {"message": message}, status=400)
        return self.get_response(request)


def _query_has_control(request: HttpRequest) -> bool:
    return any(_CONTROL.search(key) or any(_CONTROL.search(value) for value in values)
               for key, values in request.GET.lists())


class DatabaseUnavailableMiddleware:
    """Outside DRF (pages, /health, the admin): a database that cannot be reached is a 503 with
    Retry-After, as JSON for API callers and as a page for people, never a bare 500."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        from memoryhub.views import database_unavailable_response

        return database_unavailable_response(request, exception)


class DomainErrorPageMiddleware:
    """Operator pages: a domain error a view did not handle becomes a page in the site layout
    (an unknown id is a 404, a refused change a 400/409 naming the problem), never a 500."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        from memoryhub.errors import MemoryHubError
        from memoryhub.views import domain_error, is_api_request

        if is_api_request(request) or not isinstance(exception, MemoryHubError):
            return None
        return domain_error(request, exception)


class FrontClientAddressMiddleware:
    """Behind the front (config.front) gunicorn listens on a Unix socket, so ``REMOTE_ADDR`` is empty;
    the front sets ``X-Forwarded-For`` to its client's address (replacing whatever the client sent).
    Believed only for requests that came over that socket: over TCP the header is the client's own word."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.META.get("REMOTE_ADDR") and (forwarded := request.META.get("HTTP_X_FORWARDED_FOR")):
            request.META["REMOTE_ADDR"] = forwarded.split(",")[-1].strip()
        return self.get_response(request)
