"""Astrocyte's own team client (``astrocyte.harness.team``, package 0.22) against a live MemoryHub.

Three teammates share one project bank through MemoryHub's ``/v1`` over real HTTP, each with the
package's local in-memory store and its own sync state (ledger, cursor): push, pull, a push of new
text under an id the team already holds (refused, nobody's copy changes), a team-wide forget
(erased on the server, a tombstone in the feed), the tombstone pulled by the others, and a forget
on a bank under legal hold (the client's own "legal hold" error).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from banks.models import Memory
from tests.asgi_server import serving
from tests.conftest import ApiClient

BANK = "proj-team"


@pytest.fixture
def hub_url(transactional_db, settings) -> Iterator[str]:
    from django.core.asgi import get_asgi_application

    settings.MEMORYHUB_CHANGES_SETTLE_SECONDS = 0  # the feed answers what was just written
    with serving(get_asgi_application()) as url:
        yield url


class Teammate:
    """One machine: the package's local brain (in-memory store) and sync state under its own directory."""

    def __init__(self, name: str, url: str, token: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        from astrocyte import Astrocyte

        self.name, self.state_home, self.monkeypatch = name, root / name, monkeypatch
        self.brain = Astrocyte.from_config_dict({"provider_tier": "storage", "vector_store": "in_memory",
                                                 "llm_provider": "mock"})
        self.pipeline = self.brain._pipeline
        self.entry: dict[str, Any] = {"url": url, "token": token, "share_captured": False}

    def _here(self) -> None:
        # The client keeps its ledger and cursor under XDG_STATE_HOME: one directory per teammate.
        self.monkeypatch.setenv("XDG_STATE_HOME", str(self.state_home))

    def state(self) -> Any:
        from astrocyte.harness.team import SyncState

        self._here()
        return SyncState.load(BANK)

    def sync(self) -> Any:
        from astrocyte.harness.team import sync_bank

        self._here()
        return asyncio.run(sync_bank(self.entry, BANK, self.pipeline, self.brain))

    def forget_for_the_team(self, ids: list[str]) -> int:
        from astrocyte.harness.team import forget_shared

        self._here()
        return asyncio.run(forget_shared(self.entry, BANK, ids, self.pipeline, self.brain, team_wide=True))

    def local(self) -> dict[str, str]:
        items = asyncio.run(self.pipeline.vector_store.list_vectors(BANK, offset=0, limit=500))
        return {i.id: i.text for i in items}


@pytest.fixture
def team(hub_url, make_bank, make_token, tmp_path, monkeypatch) -> dict[str, Teammate]:
    make_bank(BANK)
    return {name: Teammate(name, hub_url, make_token({BANK: ["read", "write", "forget", "admin"]},
                                                     principal=f"user:{name}"), tmp_path, monkeypatch)
            for name in ("alice", "bob", "carol")}


def test_the_package_team_client_syncs_a_bank_through_memoryhub(team):
    from astrocyte.harness.team import TeamError
    from astrocyte.types import SyncPushRecord

    alice, bob, carol = team["alice"], team["bob"], team["carol"]
    for text in ("The release train leaves every second Tuesday.", "Staging runs on the blue cluster."):
        assert asyncio.run(alice.brain.retain(text, bank_id=BANK)).stored

    # Push: each local memory becomes one row under its own id.
    report = alice.sync()
    assert report.pushed == {"stored": 2}, report.summary()
    ids = sorted(alice.local())
    assert sorted(Memory.objects.live().filter(bank__bank_id=BANK).values_list("memory_id", flat=True)) == ids
    assert {alice.state().pushed[i] for i in ids} == {"stored"}

    # Pull: a teammate gets the same ids and texts.
    assert bob.sync().pulled == 2
    assert bob.local() == alice.local()

    # New text under an id the team holds: refused with the gateway's reason; no copy changes.
    taken = ids[0]
    asyncio.run(carol.brain.push_records(BANK, [SyncPushRecord(id=taken, text="The release train is cancelled.")]))
    pushed = carol.sync()
    assert pushed.pushed == {"rejected": 1}, pushed.summary()
    assert carol.state().pushed[taken] == ("rejected:id is already in use with different text; "
                                           "memory text is immutable")
    assert Memory.objects.get(bank__bank_id=BANK, memory_id=taken).text == alice.local()[taken]
    bob.sync()
    assert bob.local()[taken] == alice.local()[taken]

    # Erase for the team: erased on the server (a tombstone stays), then erased on every machine.
    assert alice.forget_for_the_team([taken]) == 1
    row = Memory.objects.get(bank__bank_id=BANK, memory_id=taken)
    assert row.forgotten_at is not None and row.text == "" and row.embedding is None
    assert taken not in alice.local() and alice.state().pushed[taken] == "forgotten"
    assert bob.sync().erased == 1
    assert taken not in bob.local() and set(bob.local()) == {ids[1]}
    assert taken not in bob.state().pulled

    # A legal hold refuses the team-wide forget with the 423 the client names.
    admin = ApiClient(alice.entry["token"])
    assert admin.post(f"/v1/admin/banks/{BANK}/hold", {"hold_id": "audit-1", "reason": "litigation"}).status_code == 200
    with pytest.raises(TeamError, match="legal hold"):
        alice.forget_for_the_team([ids[1]])
    assert Memory.objects.live().filter(bank__bank_id=BANK, memory_id=ids[1]).exists()
