"""The keyword arm in the bank's language with accents folded: questions and rows go through the
same text search configuration, a language change re-indexes the bank, and the BM25 document
frequencies are still counted in one bounded statement."""

from __future__ import annotations

import time

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from banks.content import content_hash
from banks.models import Bank, Job, Memory
from banks.selectors.recall import recall_memories
from banks.selectors.recall_memo import clear_recall_memos
from banks.services import text_search
from banks.services.banks import bank_update
from banks.services.bulk_memories import MemoryRow
from banks.services.memories import memory_retain
from banks.services.memory_rows import rows_insert

pytestmark = pytest.mark.django_db


def _keyword(bank: Bank, query: str) -> list[str]:
    hits, *_ = recall_memories(bank, query, arms=("keyword",), max_results=5)
    return [h.text for h in hits]


def _french(make_bank, bank_id: str = "user-fr") -> Bank:  # noqa: ANN001
    return make_bank(bank_id, config={"recall": {"language": "french"}})


def test_accented_and_unaccented_words_find_each_other(bank):
    memory_retain(bank=bank, text="We met at the café in Zürich.", actor="test")
    memory_retain(bank=bank, text="Her resume mentions a naive approach.", actor="test")
    memory_retain(bank=bank, text="The meeting was in Berlin.", actor="test")
    assert _keyword(bank, "cafe zurich") == ["We met at the café in Zürich."]
    assert _keyword(bank, "Café ZÜRICH") == ["We met at the café in Zürich."]
    assert _keyword(bank, "naïve résumé") == ["Her resume mentions a naive approach."]


def test_a_french_bank_stems_french(make_bank):
    french = _french(make_bank)
    english = make_bank("user-en")
    for bank in (french, english):
        memory_retain(bank=bank, text="Nous avons mangé des pommes délicieuses à Montréal.", actor="test")
        memory_retain(bank=bank, text="Le train part demain matin.", actor="test")
    assert Memory.objects.get(bank=french, text__startswith="Nous").search_config == "memoryhub_french"
    # manger / mangé / mangeons share the French stem; the English stemmer keeps them apart.
    assert _keyword(french, "manger une pomme") == ["Nous avons mangé des pommes délicieuses à Montréal."]
    assert _keyword(french, "montreal delicieux") == ["Nous avons mangé des pommes délicieuses à Montréal."]
    assert _keyword(english, "manger") == []
    assert _keyword(french, "trains") == ["Le train part demain matin."]
    # Stop words are dropped with their accents, before accents are folded: they match nothing.
    assert _keyword(french, "étaient à") == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_tsvector('memoryhub_french', 'Ils étaient à Montréal')::text")
        lexemes = cursor.fetchone()[0]
    assert "'montreal'" in lexemes and "'a'" not in lexemes and "'etaient'" not in lexemes


def test_bulk_loaded_rows_take_their_banks_language(make_bank):
    french = _french(make_bank)
    now = timezone.now()
    row = MemoryRow(memory_id="a", text="Ils mangeaient ensemble.", fact_type="world", memory_layer=None, tags=[],
                    metadata={}, occurred_at=None, retained_at=now, created_at=now, source="import",
                    content_hash=content_hash("Ils mangeaient ensemble."), embedding=[0.5] * 384,
                    embedding_model="hashing-384", embedding_dims=384)
    with transaction.atomic():
        rows_insert(french.pk, [row], now)
    assert Memory.objects.get(bank=french).search_config == "memoryhub_french"
    assert _keyword(french, "manger") == ["Ils mangeaient ensemble."]


def test_changing_the_language_reindexes_the_bank_and_the_api_says_so(api, bank):
    memory_retain(bank=bank, text="Nous avons mangé des pommes.", actor="test")
    assert _keyword(bank, "manger") == []
    response = api.patch(f"/v1/banks/{bank.bank_id}", {"config": {"recall": {"language": "french"}}})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["search_language"] == "french" and body["search_reindex_job_id"] is None  # small: done inline
    assert set(Memory.objects.filter(bank=bank).values_list("search_config", flat=True)) == {"memoryhub_french"}
    bank.refresh_from_db()
    assert _keyword(bank, "manger") == ["Nous avons mangé des pommes."]
    # Back to the default: the rows follow.
    api.patch(f"/v1/banks/{bank.bank_id}", {"config": {}})
    assert set(Memory.objects.filter(bank=bank).values_list("search_config", flat=True)) == {"memoryhub_english"}


def test_an_unknown_language_is_a_400_naming_it(api, bank):
    response = api.patch(f"/v1/banks/{bank.bank_id}", {"config": {"recall": {"language": "klingon"}}})
    assert response.status_code == 400
    assert "config.recall.language" in response.json()["detail"] and "klingon" in response.json()["detail"]
    created = api.post("/v1/banks", {"bank_id": "user-alice-2", "config": {"recall": {"language": 3}}})
    assert created.status_code in (400, 403)
    bank.refresh_from_db()
    assert bank.config == {}


def test_reindex_in_batches_covers_every_row(make_bank):
    bank = make_bank("user-batches")
    for i in range(7):
        memory_retain(bank=bank, text=f"Nous avons mangé la pomme numéro {i}.", actor="test")
    bank.config = {"recall": {"language": "french"}}
    bank.save(update_fields=["config"])
    assert text_search.reindex_bank(bank=bank, batch=3) == 7
    assert set(Memory.objects.filter(bank=bank).values_list("search_config", flat=True)) == {"memoryhub_french"}
    assert text_search.reindex_bank(bank=bank, batch=3) == 0


def test_the_document_frequency_statement_stays_one_and_bounded(make_bank):
    french = _french(make_bank)
    for text in ("Alice joue du violoncelle.", "Bob joue de la batterie le vendredi.", "Carole chante."):
        memory_retain(bank=french, text=text, actor="test")
    for query in ("violoncelle", "qui joue du violoncelle et de la batterie le vendredi avec Alice Bob et Carole"):
        cache.clear()
        clear_recall_memos()
        with CaptureQueriesContext(connection) as captured:
            assert _keyword(french, query)
        frequency = [q["sql"] for q in captured.captured_queries if "AS l" in q["sql"]]
        assert len(frequency) == 1 and "LIMIT 2001" in frequency[0]


def test_curation_settings_change_the_language(bank, operator, operator_client):
    from banks.models import BankMembership

    BankMembership.objects.create(user=operator, bank=bank, role="admin")
    page = operator_client.get(f"/banks/{bank.bank_id}/")
    assert b'name="language"' in page.content and b'<option value="french">' in page.content
    memory_retain(bank=bank, text="Nous avons mangé des pommes.", actor="test")
    operator_client.post(f"/banks/{bank.bank_id}/settings", {"name": bank.name, "description": "",
                                                              "dedup_threshold": "0.95", "language": "french"})
    bank.refresh_from_db()
    assert bank.config["recall"]["language"] == "french"
    assert _keyword(bank, "manger") == ["Nous avons mangé des pommes."]
    assert b'<option value="french" selected>' in operator_client.get(f"/banks/{bank.bank_id}/").content


@pytest.mark.worker
def test_a_large_bank_is_reindexed_by_a_job_on_the_worker(transactional_db, celery_worker, make_bank, monkeypatch):
    monkeypatch.setattr(text_search, "INLINE_ROWS", 2)
    bank = make_bank("user-big")
    for i in range(5):
        memory_retain(bank=bank, text=f"Nous avons mangé la pomme numéro {i}.", actor="test")
    bank_update(bank=bank, actor="test", config={"recall": {"language": "french"}})
    job = Job.objects.get(bank=bank, kind="search_language")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.is_finished:
            break
        time.sleep(0.2)
    assert job.state == "succeeded", job.message
    assert job.counts == {"reindexed": 5}
    assert set(Memory.objects.filter(bank=bank).values_list("search_config", flat=True)) == {"memoryhub_french"}
    bank.refresh_from_db()
    assert len(_keyword(bank, "manger")) == 5


def test_saving_a_memory_again_keeps_its_banks_language(make_bank):
    french = _french(make_bank)
    now = timezone.now()
    memory = Memory.objects.create(bank=french, memory_id="m1", text="Ils ont mangé tard.", retained_at=now,
                                   created_at=now, content_hash=content_hash("Ils ont mangé tard."))
    memory.text = "Ils ont mangé très tard."
    memory.save()
    memory.refresh_from_db()
    assert memory.search_config == "memoryhub_french"
    assert _keyword(french, "manger") == ["Ils ont mangé très tard."]
