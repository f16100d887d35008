"""Webhook ingest: verify the source's signature (its own scheme), refuse replays of timestamped
deliveries, retain the content in its bank."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import Any

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from banks.live.webhooks import BadSignature, verify_delivery
from banks.models import WebhookDelivery, WebhookSource
from banks.services.memories import RetainOutcome, memory_retain
from memoryhub.errors import Conflict, InvalidInput, MemoryHubError, NotFound, violated_constraint

logger = logging.getLogger(__name__)


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


MAX_ERROR_TEXT = 500


def _note(source: WebhookSource, error: str | None) -> None:
    """The source's delivery state for /health/ingest. Failing to write it never fails the delivery."""
    now = timezone.now()
    changes: dict[str, object] = (
        {"last_delivery_at": now, "delivery_count": F("delivery_count") + 1} if error is None
        else {"last_error_at": now, "last_error": error[:MAX_ERROR_TEXT], "error_count": F("error_count") + 1})
    try:
        with transaction.atomic():
            WebhookSource.objects.filter(pk=source.pk).update(**changes)
    except DatabaseError:
        logger.warning("could not record the delivery state of webhook %s", source.source_id, exc_info=True)


def webhook_ingest(*, source_id: str, body: bytes, content_type: str, headers: Mapping[str, str],
                   now: float | None = None) -> RetainOutcome:
    """``headers``: the request's headers (case-insensitive), where the source's signature is read."""
    source = WebhookSource.objects.select_related("bank").filter(source_id=source_id, enabled=True,
                                                                 bank__deleted_at__isnull=True).first()
    if source is None:
        raise NotFound("unknown source")
    try:
        outcome = _ingest(source, body=body, content_type=content_type, headers=headers, now=now)
    except MemoryHubError as exc:
        _note(source, f"{exc.status} {exc.message}")
        raise
    refused = not outcome.stored and not outcome.deduplicated
    _note(source, f"retain refused: {outcome.error}" if refused else None)
    return outcome


def _ingest(source: WebhookSource, *, body: bytes, content_type: str, headers: Mapping[str, str],
            now: float | None) -> RetainOutcome:
    try:
        verified = verify_delivery(source.secret, scheme=source.signature_scheme, headers=headers, body=body,
                                   now=time.time() if now is None else now, body_header=source.signature_header)
    except BadSignature as exc:
        raise SignatureRefused(str(exc)) from None
    data = _payload(body, content_type)
    content = data.get("content", data.get("text"))
    if not isinstance(content, str):
        raise InvalidInput("Content is empty", field="content")
    tags = data.get("tags")
    if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
        raise InvalidInput("must be a list of strings", field="tags")
    # The delivery is recorded first, in its own short transaction: the retain embeds the text (maybe a
    # remote call) before it opens its own, and no transaction waits on that. A retain that fails takes
    # the record back, so the sender's retry of the same signed request is accepted.
    try:
        with transaction.atomic():
            # A timestamped signature is accepted once; the body scheme carries nothing to judge a replay by.
            delivery = WebhookDelivery.objects.create(source=source, signature=verified) if verified else None
    except IntegrityError as exc:
        if violated_constraint(exc) == "webhook_delivery_once":
            raise Conflict("this signed request was already delivered (replay refused)") from None
        raise
    try:
        return memory_retain(bank=source.bank, text=content, actor=f"webhook:{source.source_id}",
                             tags=list(dict.fromkeys([*(source.tags or []), *(tags or [])])),
                             metadata=data.get("metadata"), source=f"webhook:{source.source_id}")
    except BaseException:
        if delivery is not None:
            WebhookDelivery.objects.filter(pk=delivery.pk).delete()
        raise


__all__ = ["SignatureRefused", "webhook_ingest"]
