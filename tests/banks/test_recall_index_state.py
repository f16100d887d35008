"""The recall trace's ``vector_index`` for a bank on its own index: a ready index is taken as ready for
60 s (no statement on each recall); a missing one ("building") is read every time, and a drop in this
process is seen at once."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from banks.models import Bank
from banks.selectors.recall_exact import index_state
from banks.services.vector_indexes import bank_vector_index_drop
from banks.vectors import INDEX_BUILDING, INDEX_OWN, INDEX_SHARED, bank_index_sql

pytestmark = pytest.mark.django_db


def _state(bank: Bank) -> tuple[str, int]:
    with CaptureQueriesContext(connection) as ctx:
        state = index_state(bank)
    return state, len(ctx.captured_queries)


def test_a_ready_own_index_is_read_once_and_a_missing_one_every_time(make_bank):
    bank = make_bank("own-index")
    assert _state(bank) == (INDEX_SHARED, 0)
    Bank.objects.filter(pk=bank.pk).update(own_vector_index=True)
    bank.refresh_from_db()
    assert _state(bank) == (INDEX_BUILDING, 1)
    assert _state(bank) == (INDEX_BUILDING, 1)
    with connection.cursor() as cursor:
        cursor.execute(bank_index_sql(bank.pk, 384, concurrently=False))
    assert _state(bank) == (INDEX_OWN, 1)
    assert _state(bank) == (INDEX_OWN, 0)
    bank_vector_index_drop(bank)
    assert _state(bank) == (INDEX_BUILDING, 1)
