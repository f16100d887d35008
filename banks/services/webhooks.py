"""Webhook ingest: verify the source's signature, refuse replays, retain the content in its bank."""

from __future__ import annotations

import json
import time
from typing import Any

from django.db import IntegrityError, transaction

from banks.live.webhooks import BadSignature, verify
from banks.models import WebhookDelivery, WebhookSource
from banks.services.memories import RetainOutcome, memory_retain
from memoryhub.errors import Conflict, InvalidInput, MemoryHubError, NotFound


class SignatureRefused(MemoryHubError):
    status, code = 401, "bad_signature"


def _payload(body: bytes, content_type: str) -> dict[str, Any]:
    if content_type.startswith("application/json"):
        try:
            data = json.loads(body or b"null")
        except (ValueError, UnicodeDecodeError):
            raise InvalidInput("the body is not valid JSON") from None
        if not isinstance(data, dict):
            raise InvalidInput("the JSON body must be an object with content (or text)")
        return data
    try:
        return {"content": body.decode("utf-8")}
    except UnicodeDecodeError:
        raise InvalidInput("a plain-text body must be UTF-8") from None


def webhook_ingest(*, source_id: str, body: bytes, content_type: str, timestamp: str | None,
                   signature: str | None, now: float | None = None) -> RetainOutcome:
    source = WebhookSource.objects.select_related("bank").filter(source_id=source_id, enabled=True,
                                                                 bank__deleted_at__isnull=True).first()
    if source is None:
        raise NotFound("unknown source")
    try:
        verified = verify(source.secret, timestamp=timestamp, signature=signature, body=body,
                          now=time.time() if now is None else now)
    except BadSignature as exc:
        raise SignatureRefused(str(exc)) from None
    data = _payload(body, content_type)
    content = data.get("content", data.get("text"))
    if not isinstance(content, str):
        raise InvalidInput("Content is empty", field="content")
    tags = data.get("tags")
    if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
        raise InvalidInput("must be a list of strings", field="tags")
    try:
        with transaction.atomic():
            WebhookDelivery.objects.create(source=source, signature=verified)
            return memory_retain(bank=source.bank, text=content, actor=f"webhook:{source.source_id}",
                                 tags=list(dict.fromkeys([*(source.tags or []), *(tags or [])])),
                                 metadata=data.get("metadata"), source=f"webhook:{source.source_id}")
    except IntegrityError as exc:
        if "webhook_delivery_once" in str(exc):
            raise Conflict("this signed request was already delivered (replay refused)") from None
        raise


__all__ = ["SignatureRefused", "webhook_ingest"]
