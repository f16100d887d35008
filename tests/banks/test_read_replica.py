"""Recall reads from the replica when one is configured; writes and read-your-writes paths never do.

The "replica" here is a second, real database on the same embedded server, holding different rows
from the primary for the same bank, so every answer shows which database it came from.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.utils import timezone

from banks.content import content_hash
from banks.models import Bank, Entity, Memory
from banks.providers import bank_embedder
from banks.services.memories import memory_retain
from memoryhub.replica import REPLICA_ALIAS, lagging_reads, read_connection

PRIMARY_TEXT = "The primary copy says the harbour ferry leaves at seven."
REPLICA_TEXT = "The replica copy says the harbour ferry leaves at nine."


def _admin_connection() -> psycopg.Connection:
    # The test server's own address (the embedded server names its socket directory in OPTIONS).
    params = connection.get_connection_params()
    where = {k: params[k] for k in ("host", "port", "user", "password") if params.get(k)}
    return psycopg.connect(dbname="postgres", autocommit=True, **where)


@pytest.fixture(scope="module")
def replica_database(django_db_setup: None, django_db_blocker: Any) -> Iterator[dict[str, Any]]:
    """A second database on the server, migrated, registered as the ``replica`` alias.

    Module-scoped so that it exists before a test's database wrapping starts (each test then runs
    in a rolled-back transaction on both databases).
    """
    name = f"{connection.settings_dict['NAME']}_replica"
    with _admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    replica = copy.deepcopy(connections.settings[DEFAULT_DB_ALIAS])
    replica["NAME"] = name
    connections.settings[REPLICA_ALIAS] = replica
    try:
        with django_db_blocker.unblock():
            call_command("migrate", database=REPLICA_ALIAS, verbosity=0, interactive=False)
        yield replica
    finally:
        with django_db_blocker.unblock():
            connections[REPLICA_ALIAS].close()
        del connections[REPLICA_ALIAS]
        connections.settings.pop(REPLICA_ALIAS, None)
        with _admin_connection() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def no_replica(replica_database: dict[str, Any]) -> Iterator[None]:
    """As a deployment without DATABASE_REPLICA_URL: no ``replica`` alias at all."""
    connections.settings.pop(REPLICA_ALIAS)
    try:
        yield
    finally:
        connections.settings[REPLICA_ALIAS] = replica_database


def _store_on_replica(bank: Bank, text: str) -> None:
    """What the replica holds: the same bank (same primary key), a different memory."""
    Bank.objects.using(REPLICA_ALIAS).create(pk=bank.pk, bank_id=bank.bank_id, name=bank.name)
    embedder = bank_embedder(bank)
    now = timezone.now()
    Memory.objects.using(REPLICA_ALIAS).create(
        bank_id=bank.pk, memory_id="replica-only", text=text, retained_at=now, created_at=now,
        content_hash=content_hash(text), embedding=embedder.embed([text])[0], embedding_model=embedder.name,
        embedding_dims=embedder.dimensions,
    )
    Entity.objects.using(REPLICA_ALIAS).create(bank_id=bank.pk, entity_id="ortega", name="Harbourmaster Ortega")


def _recall_texts(api) -> list[str]:  # noqa: ANN001
    response = api.post("/v1/recall", {"query": "When does the harbour ferry leave?", "bank_id": "user-alice"})
    assert response.status_code == 200, response.content
    return [hit["text"] for hit in response.json()["hits"]]


@pytest.mark.django_db
def test_without_a_replica_everything_reads_the_primary(no_replica, api, bank):
    memory_retain(bank=bank, text=PRIMARY_TEXT, actor="test")
    with lagging_reads():
        assert read_connection().alias == DEFAULT_DB_ALIAS
    assert _recall_texts(api) == [PRIMARY_TEXT]


@pytest.mark.django_db(databases=[DEFAULT_DB_ALIAS, REPLICA_ALIAS])
def test_recall_answers_from_the_replica_while_writes_stay_on_the_primary(replica_database, api, bank,
                                                                           operator_client):
    memory_retain(bank=bank, text=PRIMARY_TEXT, actor="test")
    _store_on_replica(bank, REPLICA_TEXT)
    assert read_connection().alias == DEFAULT_DB_ALIAS  # outside a lag-tolerant read
    with lagging_reads():
        assert read_connection().alias == REPLICA_ALIAS

    # Every arm (semantic, keyword) and the hydration of the hits ran on the replica.
    assert _recall_texts(api) == [REPLICA_TEXT]
    graph = api.post("/v1/graph/search", {"query": "Harbourmaster", "bank_id": "user-alice"})
    assert graph.status_code == 200, graph.content
    assert [e["name"] for e in graph.json()["entities"]] == ["Harbourmaster Ortega"]  # only the replica has it

    # Retain's duplicate checks read the primary: the replica's text is new there, the primary's is not.
    stored = api.post("/v1/retain", {"content": REPLICA_TEXT, "bank_id": "user-alice"}).json()
    assert stored["stored"] is True and stored["deduplicated"] is False
    again = api.post("/v1/retain", {"content": PRIMARY_TEXT, "bank_id": "user-alice"}).json()
    assert again["deduplicated"] is True
    assert Memory.objects.using(REPLICA_ALIAS).count() == 1  # nothing was written to the replica
    assert set(Memory.objects.values_list("text", flat=True)) == {PRIMARY_TEXT, REPLICA_TEXT}

    # Curation reads the primary (what an operator just saved is what they see).
    operator_client.force_login(_superuser())
    page = operator_client.get("/banks/user-alice/memories/").content.decode()
    assert "leaves at seven" in page


def _superuser():  # noqa: ANN202
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_superuser(username="root-replica", password="pw-root-123")


@pytest.fixture
def dead_replica(replica_database: dict[str, Any]) -> Iterator[None]:
    """DATABASE_REPLICA_URL naming a server that does not answer (nothing listens on port 1).

    Swapped in after the test's transactions opened on both databases (and swapped back before they
    are rolled back), so only a real connection attempt stands in its way."""
    from memoryhub import replica

    working = connections[REPLICA_ALIAS]
    dead = copy.deepcopy(replica_database)
    dead.update({"NAME": "nowhere", "HOST": "127.0.0.1", "PORT": "1"})
    dead["OPTIONS"] = {**dead.get("OPTIONS", {}), "connect_timeout": 2}
    connections.settings[REPLICA_ALIAS] = dead
    connections[REPLICA_ALIAS] = connections.create_connection(REPLICA_ALIAS)
    try:
        yield
    finally:
        connections[REPLICA_ALIAS].close()
        connections.settings[REPLICA_ALIAS] = replica_database
        connections[REPLICA_ALIAS] = working
        replica._replica_down_until = 0.0


@pytest.mark.django_db(databases=[DEFAULT_DB_ALIAS, REPLICA_ALIAS])
def test_an_unreachable_replica_is_stepped_around_and_set_aside(dead_replica, api, bank, caplog):
    from memoryhub import replica

    memory_retain(bank=bank, text=PRIMARY_TEXT, actor="test")
    assert replica.replica_in_use()
    # The recall that meets the dead replica is answered from the primary, not with a 503.
    assert _recall_texts(api) == [PRIMARY_TEXT]
    assert "read replica unreachable" in caplog.text
    # And the replica is set aside for a while: the next recalls go straight to the primary.
    assert not replica.replica_in_use()
    with lagging_reads():
        assert read_connection().alias == DEFAULT_DB_ALIAS
    assert _recall_texts(api) == [PRIMARY_TEXT]
    replica._replica_down_until = 0.0
    assert replica.replica_in_use()  # tried again once the time is up


@pytest.mark.django_db(databases=[DEFAULT_DB_ALIAS, REPLICA_ALIAS])
def test_observation_directive_and_mental_model_lists_answer_from_the_replica(replica_database, api, bank,
                                                                              operator_client):
    from banks.models import MentalModel, Observation
    from banks.services.directives import directive_create
    from banks.services.mental_models import mental_model_create
    from banks.services.observations import observation_create

    observation_create(bank=bank, text="The primary's observation.", actor="test")
    directive_create(bank=bank, rule_text="The primary's directive.", actor="test", directive_id="d-primary")
    mental_model_create(bank=bank, model_id="m-primary", title="Primary model", actor="test", content="# P")
    Bank.objects.using(REPLICA_ALIAS).create(pk=bank.pk, bank_id=bank.bank_id, name=bank.name)
    now = timezone.now()
    Observation.objects.using(REPLICA_ALIAS).create(bank_id=bank.pk, observation_id="o-replica",
                                                    text="The replica's observation.", created_at=now, updated_at=now)
    for model_id, kind in (("d-replica", MentalModel.Kind.DIRECTIVE), ("m-replica", MentalModel.Kind.GENERAL)):
        MentalModel.objects.using(REPLICA_ALIAS).create(bank_id=bank.pk, model_id=model_id, kind=kind,
                                                        title=model_id, refreshed_at=now, created_at=now)

    observations = api.get("/v1/observations", {"bank_id": "user-alice"}).json()["observations"]
    assert [o["text"] for o in observations] == ["The replica's observation."]
    directives = api.get("/v1/directives", {"bank_id": "user-alice"}).json()["directives"]
    assert [d["model_id"] for d in directives] == ["d-replica"]
    models = api.get("/v1/mental-models", {"bank_id": "user-alice"}).json()["models"]
    assert {m["model_id"] for m in models} == {"d-replica", "m-replica"}
    # A single row by its id, and the operator pages, still read the primary.
    assert api.get("/v1/directives/d-primary", {"bank_id": "user-alice"}).status_code == 200
    operator_client.force_login(_superuser())
    page = operator_client.get("/banks/user-alice/observations/").content.decode()
    assert "primary&#x27;s observation" in page or "primary's observation" in page
