"""Compile: durable wiki pages, one per scope (a tag), summarised from the scope's memories."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from django.db import connection, transaction

from banks.content import estimate_tokens
from banks.live.structured_doc import slugify_heading
from banks.models import Bank, Memory, WikiPage
from banks.providers import get_llm
from banks.services.audit import audit_record

MAX_SCOPES = 20
MAX_MEMORIES_PER_PAGE = 200
MIN_MEMORIES_PER_PAGE = 2


@dataclass
class CompileOutcome:
    bank_id: str
    scopes_compiled: list[str] = field(default_factory=list)
    pages_created: int = 0
    pages_updated: int = 0
    noise_memories: int = 0
    tokens_used: int = 0
    elapsed_ms: int = 0
    error: str | None = None


def _top_tags(bank: Bank) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tag, count(*) AS n FROM banks_memory m, unnest(m.tags) AS tag WHERE m.bank_id = %s "
            "AND m.archived_at IS NULL AND m.forgotten_at IS NULL GROUP BY tag HAVING count(*) >= %s "
            "ORDER BY n DESC, tag LIMIT %s",
            [bank.pk, MIN_MEMORIES_PER_PAGE, MAX_SCOPES],
        )
        return [row[0] for row in cursor.fetchall()]


def bank_compile(*, bank: Bank, actor: str, scope: str | None = None) -> CompileOutcome:
    started = time.perf_counter()
    outcome = CompileOutcome(bank_id=bank.bank_id)
    scopes = [scope] if scope else _top_tags(bank)
    llm = get_llm()
    for name in scopes:
        rows = list(Memory.objects.live().filter(bank=bank, tags__contains=[name])
                    .order_by("-retained_at").values_list("memory_id", "text")[:MAX_MEMORIES_PER_PAGE])
        if scope and not rows:
            # An explicit scope that is no tag: fall back to the memories that mention it.
            rows = list(Memory.objects.live().filter(bank=bank, text__icontains=name)
                        .order_by("-retained_at").values_list("memory_id", "text")[:MAX_MEMORIES_PER_PAGE])
        if len(rows) < (1 if scope else MIN_MEMORIES_PER_PAGE):
            outcome.noise_memories += len(rows)
            continue
        texts = [t for _, t in rows]
        body = llm.summarize(texts, title=name)
        outcome.tokens_used += sum(estimate_tokens(t) for t in texts) + estimate_tokens(body)
        page_id = f"wiki:{slugify_heading(name)}"
        with transaction.atomic():
            page, created = WikiPage.objects.select_for_update().get_or_create(
                bank=bank, page_id=page_id,
                defaults={"scope": name, "title": name, "content": body, "source_ids": [m for m, _ in rows]},
            )
            if not created:
                page.content, page.source_ids, page.revision = body, [m for m, _ in rows], page.revision + 1
                page.save(update_fields=["content", "source_ids", "revision", "updated_at"])
        outcome.pages_created += int(created)
        outcome.pages_updated += int(not created)
        outcome.scopes_compiled.append(name)
    outcome.elapsed_ms = int((time.perf_counter() - started) * 1000)
    if outcome.scopes_compiled:
        audit_record(actor=actor, action="wiki.compile", bank=bank, target_ids=outcome.scopes_compiled,
                     details={"pages_created": outcome.pages_created, "pages_updated": outcome.pages_updated})
    return outcome
