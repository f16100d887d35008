"""Migration 0033 runs online: a loaded bank is migrated while retains go on, none is lost, and every
constraint ends up valid. The same as ``bench/keys_migration_bench.py`` (100,000 memories), at a small scale."""

from __future__ import annotations

import pytest
from django.conf import settings

from bench.keys_migration_bench import migrate_under_writes

# Not on a partitioned install (MEMORYHUB_BANK_PARTITIONS): its schema cannot go back before 0033 (a key on
# id alone is refused there), and the fill trigger cannot move a row it gives a bank to another partition.
flat_only = pytest.mark.skipif(bool(settings.MEMORYHUB_BANK_PARTITIONS), reason="not on a partitioned install")


@flat_only
@pytest.mark.django_db(transaction=True)
def test_the_keys_migrate_under_writes_and_none_is_lost():
    result = migrate_under_writes("keys-online", 3000)
    assert result["retain_errors"] == []
    assert result["lost"] == []
    assert result["retains_during_migration"] > 0
    assert result["not_validated"] == []
    assert result["memory_primary_key"] == "PRIMARY KEY (bank_id, id)"
    assert result["total_in_bank"] == 3000 + result["retains_answered"]
