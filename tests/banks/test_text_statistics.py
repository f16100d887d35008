"""Big banks keep their frequent words' counts: the keyword arm reads them instead of counting each
question's words through the index, scales them as the bank grows, and still counts the rest."""

from __future__ import annotations

import pytest
from django.db import connection

from banks.models import BankLexeme, BankTextStatistics
from banks.selectors import recall_keyword
from banks.selectors.recall_keyword import document_frequencies, keyword_arm, query_lexemes
from banks.selectors.recall_memo import clear_recall_memos
from banks.services import text_statistics
from banks.services.bank_removal import bank_hide, bank_remove_rows
from banks.services.forget import memory_forget
from banks.services.memories import memory_retain
from banks.services.text_statistics import (
    bank_lexemes_after_load,
    bank_lexemes_count,
    bank_lexemes_refresh_all,
)

pytestmark = pytest.mark.django_db
LIVE = "m.bank_id = %s AND m.archived_at IS NULL AND m.forgotten_at IS NULL"


@pytest.fixture(autouse=True)
def small_thresholds(settings, monkeypatch):
    # Stored from 3 memories on; a bank is "big" from 8.
    monkeypatch.setattr(text_statistics, "LEXEME_MIN_DOCUMENTS", 3)
    monkeypatch.setattr(recall_keyword, "MEMO_DF", 10**9)  # no per-process memo: every figure from the database
    settings.MEMORYHUB_LEXEME_STATISTICS_MIN = 8
    clear_recall_memos()
    yield
    clear_recall_memos()


def retain(bank, text, **kwargs):
    return memory_retain(bank=bank, text=text, actor="test", near_dedup=False, **kwargs)


def stored(bank) -> dict[str, int]:
    return dict(BankLexeme.objects.filter(bank=bank).values_list("lexeme", "documents"))


def frequencies(bank, *words: str) -> dict[str, int]:
    with connection.cursor() as cursor:
        lexemes = query_lexemes(cursor, " ".join(words))
        total, _ = recall_keyword.bank_text_stats(cursor, bank)
        return document_frequencies(cursor, bank, lexemes, total)


def test_a_count_stores_the_words_of_at_least_so_many_live_memories(bank):
    for i in range(6):
        retain(bank, f"Heron report {i}: the heron waded.")
    retain(bank, "A kingfisher, once.")
    gone = retain(bank, "Heron, forgotten.")
    memory_forget(bank=bank, memory_ids=[gone.memory_id], actor="test")
    assert bank_lexemes_count(bank) == 3  # heron, report, wade
    assert stored(bank) == {"heron": 6, "report": 6, "wade": 6}
    stats = BankTextStatistics.objects.get(bank=bank)
    assert stats.live_rows == 7 and stats.search_config == "memoryhub_english"


def test_recall_reads_stored_counts_scaled_to_the_bank_now_and_counts_the_other_words(bank):
    for i in range(8):
        retain(bank, f"Heron report {i}.")
    bank_lexemes_count(bank)
    # A figure no count would give: proves it was read, not counted.
    BankLexeme.objects.filter(bank=bank, lexeme="heron").update(documents=5)
    for i in range(8):
        retain(bank, f"Osprey note {i}.")
    clear_recall_memos()
    found = frequencies(bank, "heron", "osprey")
    # Counted over 8 live memories, the bank holds 16 now: 5 scaled to 10. Osprey came later: counted.
    assert found == {"heron": 10, "osprey": 8}


def test_counts_taken_in_another_language_are_not_used(bank):
    for i in range(8):
        retain(bank, f"Heron report {i}.")
    bank_lexemes_count(bank)
    BankLexeme.objects.filter(bank=bank, lexeme="heron").update(documents=5)
    BankTextStatistics.objects.filter(bank=bank).update(search_config="memoryhub_french")
    assert frequencies(bank, "heron") == {"heron": 8}


def test_keyword_recall_with_stored_counts_finds_what_counting_finds(bank):
    texts = [f"Heron report {i} from the marsh." for i in range(10)] + ["The heron and the bittern at dawn."]
    for text in texts:
        retain(bank, text)
    before = keyword_arm(bank, "heron bittern", LIVE, [bank.pk], 5)
    bank_lexemes_count(bank)
    clear_recall_memos()
    assert keyword_arm(bank, "heron bittern", LIVE, [bank.pk], 5) == before
    assert before[0][0] == bank.memories.get(text=texts[-1]).pk


def test_the_periodic_refresh_counts_big_banks_again_only_when_they_drift(bank, make_bank):
    small = make_bank("user-small")
    for i in range(10):
        retain(bank, f"Heron report {i}.")
    for i in range(3):
        retain(small, f"Heron report {i}.")
    assert bank_lexemes_refresh_all() == [bank.pk]
    assert bank_lexemes_refresh_all() == []  # nothing changed
    retain(bank, "Heron report ten.")
    assert bank_lexemes_refresh_all() == []  # 11 of 10: within the drift
    for i in range(3):
        retain(bank, f"Heron again {i}.")
    assert bank_lexemes_refresh_all() == [bank.pk]
    assert stored(bank)["heron"] == 14
    # Forgotten below the threshold: its statistics go (counting is cheap again).
    memory_forget(bank=bank, memory_ids=list(bank.memories.values_list("memory_id", flat=True)[:10]), actor="test")
    assert bank_lexemes_refresh_all() == []
    assert not BankTextStatistics.objects.filter(bank=bank).exists() and not stored(bank)


def test_a_language_change_makes_the_refresh_count_again(bank):
    for i in range(10):
        retain(bank, f"Heron report {i}.")
    bank_lexemes_refresh_all()
    BankTextStatistics.objects.filter(bank=bank).update(search_config="memoryhub_french")
    assert bank_lexemes_refresh_all() == [bank.pk]


def test_after_a_load_only_a_big_bank_with_stale_counts_is_counted(bank):
    for i in range(7):
        retain(bank, f"Heron report {i}.")
    assert bank_lexemes_after_load(bank) is False  # 7 < 8
    retain(bank, "Heron report 7.")
    assert bank_lexemes_after_load(bank) is True
    assert bank_lexemes_after_load(bank) is False  # fresh


def test_removing_a_bank_removes_its_lexemes(bank):
    for i in range(8):
        retain(bank, f"Heron report {i}.")
    bank_lexemes_count(bank)
    bank_hide(bank)
    counts = bank_remove_rows(bank=bank, actor="test")
    assert counts["lexemes"] == 2  # heron, report
    assert not BankLexeme.objects.exists() and not BankTextStatistics.objects.exists()
