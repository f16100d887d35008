"""A memory's access log: who read it (recall, reflect, history, an operator's search), when, and
through which surface; a page at a time, newest first, and as CSV."""

from __future__ import annotations

import csv
from collections.abc import Iterator

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render

from banks.models import Bank, Memory
from banks.selectors.access_log import memory_access_page, memory_access_rows
from banks.services.access_log import access_log_days
from curation.access import operator_bank
from memoryhub.csv_cells import neutralise_row


def _memory(request: HttpRequest, bank_id: str, memory_id: str) -> tuple[Bank, Memory]:
    """The memory in the operator's bank; a memory of another bank is not found here (404)."""
    bank = operator_bank(request, bank_id)
    memory = Memory.objects.only("id", "memory_id", "bank_id").filter(bank=bank, memory_id=memory_id).first()
    if memory is None:
        raise Http404("No such memory")
    return bank, memory


@login_required
def memory_access(request: HttpRequest, bank_id: str, memory_id: str) -> HttpResponse:
    bank, memory = _memory(request, bank_id, memory_id)
    page = memory_access_page(bank, memory.memory_id, before=request.GET.get("before"))
    return render(request, "curation/memory_access.html", {
        "bank": bank, "memory": memory, "access": page, "tab": "memories", "access_days": access_log_days(),
        "deeper": bool(request.GET.get("before"))})


class _Echo:
    def write(self, value: str) -> str:
        return value


@login_required
def memory_access_csv(request: HttpRequest, bank_id: str, memory_id: str) -> StreamingHttpResponse:
    bank, memory = _memory(request, bank_id, memory_id)
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        yield writer.writerow(["time", "kind", "surface", "reader", "bank", "memory"])
        for row in memory_access_rows(bank, memory.memory_id):
            # Token labels come from whoever minted them: a cell a spreadsheet would run stays text.
            yield writer.writerow(neutralise_row([row.at.isoformat(), row.kind, row.surface, row.reader,
                                                  bank.bank_id, memory.memory_id]))

    response = StreamingHttpResponse(lines(), content_type="text/csv")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in memory.memory_id)[:80]
    response["Content-Disposition"] = f'attachment; filename="access-{safe}.csv"'
    return response
