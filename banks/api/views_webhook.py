"""/v1/ingest/webhook/<source_id>: a signed push from a configured source, retained in its bank.

No bearer token: the source proves itself with its HMAC signature, signed the way the source is
configured to sign (see banks.live.webhooks).
"""

from __future__ import annotations

from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from banks.services.webhooks import webhook_ingest
from memoryhub.errors import MemoryHubError, error_body


class WebhookIngestApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def post(self, request: Request, source_id: str) -> Response:
        try:
            outcome = webhook_ingest(
                source_id=source_id, body=request.body, content_type=request.content_type or "",
                headers=request.headers)
        except MemoryHubError as exc:
            # Astrocyte's webhook answers carry "ok"; the usual error envelope comes with it.
            return Response({"ok": False, **error_body(exc.status, exc.code, exc.message)}, status=exc.status)
        return Response({"ok": True, "error": None, "stored": outcome.stored, "memory_id": outcome.memory_id,
                         "deduplicated": outcome.deduplicated,
                         "retain_error": outcome.error if not outcome.stored else None})
