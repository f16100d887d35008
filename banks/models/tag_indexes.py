"""A vector index of its own for a big tag of a big bank.

A question filtered on one tag that a bank holds tens of thousands of times is answered by reading
every tagged row (one heap page each, since tagged rows are spread over the table) or by walking a
graph whose entries the filter mostly rejects; at a million memories both took longer than the whole
unfiltered recall. A partial HNSW index over just the tag's rows is walked like a small bank's own
graph. banks.services.tag_indexes chooses the tags and builds the indexes; recall uses one when its
filter names exactly that tag (banks.selectors.recall_exact).
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from banks.models.bank_scoped import BankScoped
from banks.models.banks import BANK_KEY, Bank


class BankTagIndex(BankScoped, models.Model):
    """One tag of a bank with an HNSW index over its rows (named ``memory_hnsw_tag_<pk>``)."""

    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="tag_indexes")
    tag = models.CharField(max_length=255)
    # The vector size of the bank's model when the index was built (the index casts to it).
    dimensions = models.IntegerField()
    # Live tagged memories with a vector when the tag was chosen: the size of the graph recall walks.
    rows = models.IntegerField()
    chosen_at = models.DateTimeField()
    built_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bank", "tag"], name="bank_tag_index_unique")]

    def __str__(self) -> str:
        return f"vector index of tag {self.tag!r} in {self.bank_id} ({self.rows} rows)"
