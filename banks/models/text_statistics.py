"""How many memories of a big bank hold each of its frequent words (the keyword arm's statistics).

BM25 weighs a question's words by how rare they are in the bank. Counting that on every question
costs one index-and-row visit per matching memory: at a million memories, the counts of a question's
frequent words were most of a recall. For banks of ``MEMORYHUB_LEXEME_STATISTICS_MIN`` memories or
more, a periodic job (banks.services.text_statistics) keeps the frequency of every lexeme in at
least ``LEXEME_MIN_DOCUMENTS`` of their live memories; recall reads those in one indexed lookup and still
counts the others, so a word retained a moment ago is weighed (and found) at once.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from banks.models.bank_scoped import BankScoped
from banks.models.banks import BANK_KEY, Bank

# Lexemes in fewer live memories than this are not stored: recall counts them (cheaply) on each question.
LEXEME_MIN_DOCUMENTS = 100


class BankTextStatistics(BankScoped, models.Model):
    """When a bank's lexemes were last counted, over how many live memories, in which configuration."""

    bank = models.OneToOneField(Bank, on_delete=models.CASCADE, primary_key=True, related_name="text_statistics")
    # The text search configuration the counted rows were indexed with (a bank's language can change).
    search_config = models.CharField(max_length=63)
    live_rows = models.BigIntegerField()
    counted_at = models.DateTimeField()
    # Live memories when its tags were last counted for their vector indexes (banks.services.tag_indexes);
    # None: not counted since the statistics were made (a big load resets it).
    tags_live_rows = models.BigIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"text statistics of {self.bank_id} ({self.live_rows} rows)"


class BankLexeme(BankScoped, models.Model):
    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="lexemes")
    lexeme = models.TextField()
    # Live memories holding the lexeme when the bank was counted.
    documents = models.IntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bank", "lexeme"], name="bank_lexeme_unique")]

    def __str__(self) -> str:
        return f"{self.lexeme} in {self.documents} memories of {self.bank_id}"
