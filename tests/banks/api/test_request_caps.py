"""Bounds on what one request may list: banks per recall, tags, ids per forget, operations per
mental-model update, entity ids per neighbours call. Over a cap is a 400 with the error envelope naming
the field, on REST and the agent tools alike, before any of it is worked on."""

from __future__ import annotations

import pytest

from banks.models import Memory
from banks.services.memories import memory_retain
from banks.services.mental_models import mental_model_create
from memoryhub.errors import InvalidInput

pytestmark = pytest.mark.django_db

B = "user-alice"


@pytest.fixture
def small_caps(settings):
    settings.MEMORYHUB_MAX_BANKS_PER_REQUEST = 3
    settings.MEMORYHUB_MAX_TAGS_PER_REQUEST = 3
    settings.MEMORYHUB_MAX_IDS_PER_REQUEST = 3
    settings.MEMORYHUB_MAX_DELTA_OPERATIONS = 3
    settings.MEMORYHUB_MAX_ENTITY_IDS = 3


def _refused(response, field):
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["error"]["field"] == field and "at most 3" in body["detail"]


FOUR = ["a", "b", "c", "d"]
OPS = [{"op": "add_section", "heading": f"H{i}"} for i in range(4)]
CASES = [
    ("/v1/recall", {"query": "x", "banks": [f"user-{n}" for n in FOUR]}, "banks"),
    ("/v1/recall", {"query": "x", "bank_id": B, "tags": FOUR}, "tags"),
    ("/v1/history", {"query": "x", "bank_id": B, "as_of": "2030-01-01T00:00:00Z", "tags": FOUR}, "tags"),
    ("/v1/forget", {"bank_id": B, "memory_ids": FOUR}, "memory_ids"),
    ("/v1/forget", {"bank_id": B, "tags": FOUR}, "tags"),
    ("/v1/mental-models/mm/update", {"bank_id": B, "operations": OPS}, "operations"),
    ("/v1/graph/neighbors", {"bank_id": B, "entity_ids": FOUR}, "entity_ids"),
    ("/v1/agent/memory_recall", {"query": "x", "banks": [f"user-{n}" for n in FOUR]}, "banks"),
    ("/v1/agent/memory_forget", {"bank_id": B, "memory_ids": FOUR}, "memory_ids"),
    ("/v1/agent/memory_update_mental_model", {"bank_id": B, "model_id": "mm", "operations": OPS}, "operations"),
    ("/v1/agent/memory_graph_neighbors", {"bank_id": B, "entity_ids": FOUR}, "entity_ids"),
]


@pytest.mark.parametrize(("path", "body", "field"), CASES, ids=[f"{p}-{f}" for p, _, f in CASES])
def test_over_a_cap_is_a_400_naming_the_field(api_for, bank, small_caps, path, body, field):
    mental_model_create(bank=bank, model_id="mm", title="T", actor="test", content="# T")
    kept = [memory_retain(bank=bank, text=f"Memory {n}.", actor="test").memory_id for n in FOUR]
    client = api_for({"user-*": ["*"]})
    if field == "memory_ids":
        body = {**body, "memory_ids": kept}
    _refused(client.post(path, body), field)
    assert Memory.objects.filter(bank=bank, forgotten_at__isnull=True).count() == 4


def test_at_the_cap_is_answered(api_for, bank, small_caps):
    client = api_for({"user-*": ["*"]})
    kept = [memory_retain(bank=bank, text=f"Memory {n}.", actor="test").memory_id for n in FOUR[:3]]
    assert client.post("/v1/forget", {"bank_id": B, "memory_ids": kept}).json()["deleted_count"] == 3
    assert client.post("/v1/recall", {"query": "x", "banks": ["user-a", "user-b", B]}).status_code == 200


def test_the_service_bounds_delta_operations_for_every_surface(bank, small_caps):
    from banks.services.mental_models import mental_model_apply_delta

    model = mental_model_create(bank=bank, model_id="mm", title="T", actor="test", content="# T")
    with pytest.raises(InvalidInput) as refused:
        mental_model_apply_delta(model=model, operations=OPS, actor="test")
    assert refused.value.field == "operations"


def test_the_default_caps_refuse_the_reported_sizes(api_for, bank):
    client = api_for({"user-*": ["*"]})
    mental_model_create(bank=bank, model_id="mm", title="T", actor="test", content="# T")
    ops = [{"op": "add_section", "heading": f"H{i}"} for i in range(20_000)]
    assert client.post("/v1/mental-models/mm/update", {"bank_id": B, "operations": ops}).status_code == 400
    assert client.post("/v1/recall", {"query": "x", "banks": [f"b-{i}" for i in range(1000)]}).status_code == 400
    assert client.post("/v1/recall", {"query": "x", "bank_id": B,
                                      "tags": [f"t{i}" for i in range(100_000)]}).status_code == 400
    assert client.post("/v1/forget", {"bank_id": B, "memory_ids": [f"m{i}" for i in range(200_000)]}
                       ).status_code == 400


def test_the_caps_are_in_the_openapi_document(client, settings):
    schemas = client.get("/v1/openapi.json").json()["components"]["schemas"]

    def max_items(model, field):
        prop = schemas[model]["properties"][field]
        return next(v["maxItems"] for v in prop.get("anyOf", [prop]) if v.get("type") == "array")

    assert max_items("RecallRequest", "banks") == settings.MEMORYHUB_MAX_BANKS_PER_REQUEST
    assert max_items("ForgetRequest", "memory_ids") == settings.MEMORYHUB_MAX_IDS_PER_REQUEST
    assert max_items("MentalModelUpdateRequest", "operations") == settings.MEMORYHUB_MAX_DELTA_OPERATIONS
    assert max_items("MemoryGraphNeighborsArguments", "entity_ids") == settings.MEMORYHUB_MAX_ENTITY_IDS
