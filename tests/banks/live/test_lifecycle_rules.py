"""Lifecycle decisions without a database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from banks.live.lifecycle import ARCHIVE, DELETE, KEEP, PolicyError, decide, policy_from

NOW = datetime(2026, 11, 23, tzinfo=UTC)


def _decide(policy, age_days, *, recalled_days=None, fact_type="world", tags=(), archived=False, held=False):
    return decide(policy, now=NOW, created_at=NOW - timedelta(days=age_days),
                  last_recalled_at=NOW - timedelta(days=recalled_days) if recalled_days is not None else None,
                  fact_type=fact_type, tags=tags, archived=archived, held=held)


def test_delete_archive_keep_boundaries():
    policy = policy_from(delete_after_days=365, archive_after_days=90)
    assert _decide(policy, 365)[0] == DELETE
    assert _decide(policy, 364)[0] == ARCHIVE
    assert _decide(policy, 90) == (ARCHIVE, "90 days since creation")
    assert _decide(policy, 89) == (KEEP, "within policy")
    assert _decide(policy, 200, archived=True)[0] == KEEP


def test_last_recall_resets_the_archive_clock():
    policy = policy_from(archive_after_days=30)
    assert _decide(policy, 100, recalled_days=5)[0] == KEEP
    assert _decide(policy, 100, recalled_days=31) == (ARCHIVE, "30 days since last recall")


def test_fact_type_override_exempt_tags_and_holds():
    policy = policy_from(delete_after_days=365, fact_type_overrides={"experience": {"delete_after_days": 7}},
                         exempt_tags=["keep"])
    assert _decide(policy, 8, fact_type="experience")[0] == DELETE
    assert _decide(policy, 8, fact_type="world")[0] == KEEP
    assert _decide(policy, 900, tags=["keep", "x"]) == (KEEP, "exempt tag keep")
    assert _decide(policy, 900, held=True) == (KEEP, "legal hold")
    null_override = policy_from(delete_after_days=1, fact_type_overrides={"world": {"delete_after_days": None}})
    assert _decide(null_override, 50)[0] == KEEP


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"delete_after_days": -1}, "delete_after_days"),
    ({"archive_after_days": "90"}, "archive_after_days"),
    ({"archive_after_days": True}, "archive_after_days"),
    ({"fact_type_overrides": {"world": {"ttl": 3}}}, "fact_type_overrides.world"),
    ({"fact_type_overrides": {"world": {"delete_after_days": 10**6}}}, "fact_type_overrides.world.delete_after_days"),
    ({"exempt_tags": "keep"}, "exempt_tags"),
])
def test_bad_policies_name_the_field(kwargs, field):
    with pytest.raises(PolicyError) as caught:
        policy_from(**kwargs)
    assert caught.value.field == field
