"""OpenAPI 3 for /v1, generated from the pydantic wire models.

drf-spectacular walks the URL patterns and views; this schema class replaces
what it cannot know (our bodies are pydantic models, not serializers) with the
models' own JSON schemas, and a post-processing hook files those under
``components/schemas``. Each operation of banks names its body or query model here; the operations of
the apps built on banks (portability, agents) are added by the whole API's schema, config/openapi.py.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from pydantic import BaseModel

from banks.api import responses as out
from banks.api import responses_admin as admin_out
from banks.api import responses_resources as res
from banks.api import schemas as core
from banks.api import schemas_admin as admin
from banks.api import schemas_live as live
from banks.api.openapi_statuses import ERROR_TEXTS, error_codes, success_codes
from banks.models.banks import BANK_ID_PATTERN
from memoryhub.input_rules import request_cap

# (view class name, HTTP method) -> (body model, query model, permission, summary)
OPERATIONS: dict[tuple[str, str], tuple[type[BaseModel] | None, type[BaseModel] | None, str, str]] = {
    ("RetainApi", "post"): (core.RetainRequest, None, "write", "Store content into a bank"),
    ("RecallApi", "post"): (core.RecallRequest, None, "read", "Hybrid recall from one or several banks"),
    ("DebugRecallApi", "post"): (core.RecallRequest, None, "read", "Recall trace and hit count only"),
    ("HistoryApi", "post"): (core.HistoryRequest, None, "read", "Recall as the bank was at a moment"),
    ("ForgetApi", "post"): (core.ForgetRequest, None, "forget",
                            "Forget by ids, tags, date or whole bank (admin for scope all and compliance)"),
    ("ReflectApi", "post"): (live.ReflectRequest, None, "read", "Answer a question from memory, with sources"),
    ("AuditApi", "post"): (live.AuditRequest, None, "read", "Coverage score and gaps of a bank"),
    ("CompileApi", "post"): (live.CompileRequest, None, "write", "Compile wiki pages per scope"),
    ("GraphSearchApi", "post"): (live.GraphSearchRequest, None, "read", "Search entities"),
    ("GraphNeighborsApi", "post"): (live.GraphNeighborsRequest, None, "read", "Memories linked to entities"),
    ("MentalModelsApi", "get"): (None, live.MentalModelListQuery, "read", "List mental models"),
    ("MentalModelsApi", "post"): (live.MentalModelCreateRequest, None, "write", "Create or replace a mental model"),
    ("MentalModelApi", "get"): (None, live.BankQuery, "read", "Get a mental model"),
    ("MentalModelApi", "patch"): (live.MentalModelUpdateRequest, None, "write", "Apply delta operations"),
    ("MentalModelApi", "delete"): (None, live.BankQuery, "forget", "Delete a mental model (soft)"),
    ("MentalModelRefreshApi", "post"): (live.MentalModelRefreshRequest, None, "write",
                                        "Refresh content and/or sources"),
    ("MentalModelUpdateApi", "post"): (live.MentalModelUpdateRequest, None, "write", "Apply delta operations"),
    ("MentalModelRevisionsApi", "get"): (None, live.BankQuery, "read", "List revisions"),
    ("MentalModelRevisionApi", "get"): (None, live.BankQuery, "read", "Get one revision"),
    ("MentalModelDiffApi", "get"): (None, live.DiffQuery, "read", "Diff two revisions"),
    ("MentalModelRevertApi", "post"): (live.MentalModelRevertRequest, None, "write",
                                       "Revert to a revision (as a new revision)"),
    ("ObservationsApi", "get"): (None, live.ObservationListQuery, "read", "List observations (trend filter)"),
    ("ObservationsApi", "post"): (live.ObservationCreateRequest, None, "write", "Create an observation"),
    ("ObservationApi", "get"): (None, live.BankQuery, "read", "Get an observation"),
    ("ObservationApi", "patch"): (live.ObservationUpdateRequest, None, "write", "Update an observation"),
    ("ObservationApi", "delete"): (None, live.BankQuery, "forget", "Delete an observation"),
    ("ObservationsInvalidateApi", "post"): (live.ObservationsInvalidateRequest, None, "forget",
                                            "Invalidate observations citing memories"),
    ("ObservationsConsolidateApi", "post"): (live.BankQuery, None, "write", "Start a consolidation job"),
    ("DirectivesApi", "get"): (None, live.BankQuery, "read", "List directives"),
    ("DirectivesApi", "post"): (live.DirectiveCreateRequest, None, "write", "Author a directive"),
    ("DirectiveApi", "get"): (None, live.BankQuery, "read", "Get a directive"),
    ("DirectiveApi", "patch"): (live.DirectiveUpdateRequest, None, "write", "Edit or (de)activate a directive"),
    ("DirectiveApi", "delete"): (None, live.BankQuery, "forget", "Delete a directive"),
    ("DirectiveDeactivateApi", "post"): (live.BankQuery, None, "write", "Deactivate a directive"),
    ("BanksApi", "get"): (None, None, "read", "Banks this token can see"),
    ("BanksApi", "post"): (live.BankCreateRequest, None, "admin", "Create a bank"),
    ("BankApi", "get"): (None, None, "read", "A bank with its counts"),
    ("BankApi", "patch"): (live.BankUpdateRequest, None, "admin", "Change bank settings"),
    ("BankApi", "delete"): (None, live.BankDeleteQuery, "admin",
                            "Delete a bank (confirm=<bank_id>): 200 when done, 202 + a job for a big bank"),
    ("AdminBanksApi", "get"): (None, None, "admin", "Ids of the banks this token administers"),
    ("AdminBanksHealthApi", "get"): (None, None, "admin", "Health of every bank this token administers"),
    ("AdminBankHealthApi", "get"): (None, None, "admin", "Health of one bank, from its real counts"),
    ("AdminSourcesApi", "get"): (None, None, "admin",
                                 "Webhook sources of the banks this token administers, with their delivery state"),
    ("HoldApi", "get"): (None, None, "admin", "Whether the bank is under legal hold, and its holds"),
    ("HoldApi", "post"): (admin.HoldSetRequest, None, "admin", "Place a legal hold (forget is then a 423)"),
    ("HoldReleaseApi", "delete"): (None, admin.HoldReleaseQuery, "admin", "Release a legal hold"),
    ("LifecycleRunApi", "post"): (admin.LifecycleRunRequest, None, "admin",
                                  "Run the bank's lifecycle policy now (recorded as a job)"),
    ("LifecyclePolicyApi", "get"): (None, None, "admin", "The bank's lifecycle policy"),
    ("LifecyclePolicyApi", "put"): (admin.LifecyclePolicyRequest, None, "admin", "Set the bank's lifecycle policy"),
}


def _sync_operations() -> None:
    from banks.api import views_sync as sync

    OPERATIONS.update({
        ("SyncPushApi", "post"): (sync.SyncPushRequest, None, "write",
                                  "Push up to 100 client-id records: stored, unchanged, duplicate or rejected"),
        ("ChangesApi", "get"): (None, sync.ChangesQuery, "read",
                                "Creates, updates and tombstones after an opaque cursor"),
    })



def _tenant_operations() -> None:
    from banks.api import views_tenants as tenants

    OPERATIONS.update({
        ("DsarForgetPrincipalApi", "post"): (tenants.DsarForgetPrincipalRequest, None, "admin",
                                             "Erase a principal's tagged memories in every bank of a tenant"),
        ("TenantStorageApi", "get"): (None, None, "admin", "Storage used by a tenant's banks"),
    })


# (view class name, HTTP method) -> response model, where the body is described.
RESPONSES: dict[tuple[str, str], type[BaseModel]] = {
    ("RetainApi", "post"): out.RetainResult, ("RecallApi", "post"): out.RecallResult,
    ("HistoryApi", "post"): out.HistoryResult, ("ForgetApi", "post"): out.ForgetResult,
    ("ReflectApi", "post"): out.ReflectResult, ("AuditApi", "post"): out.AuditResult,
    ("CompileApi", "post"): out.CompileResult, ("GraphSearchApi", "post"): out.GraphSearchResult,
    ("GraphNeighborsApi", "post"): out.GraphNeighborsResult, ("MentalModelsApi", "get"): out.MentalModelList,
    ("MentalModelsApi", "post"): out.MentalModel, ("MentalModelApi", "get"): out.MentalModel,
    ("MentalModelApi", "delete"): out.Deleted, ("MentalModelRefreshApi", "post"): out.MentalModel,
    ("MentalModelUpdateApi", "post"): out.DeltaUpdateResult, ("MentalModelApi", "patch"): out.DeltaUpdateResult,
    ("MentalModelRevertApi", "post"): out.MentalModel, ("ObservationsApi", "get"): out.ObservationList,
    ("ObservationsApi", "post"): out.Observation, ("ObservationApi", "get"): out.Observation,
    ("ObservationApi", "patch"): out.Observation, ("ObservationApi", "delete"): out.Deleted,
    ("ObservationsInvalidateApi", "post"): out.Deleted, ("AdminBanksApi", "get"): admin_out.AdminBankList,
    ("AdminBanksHealthApi", "get"): admin_out.BankHealthList, ("AdminBankHealthApi", "get"): admin_out.BankHealth,
    ("HoldApi", "get"): admin_out.HoldState, ("HoldApi", "post"): admin_out.LegalHold,
    ("AdminSourcesApi", "get"): admin_out.IngestSourceList,
    ("HoldReleaseApi", "delete"): admin_out.HoldReleased, ("LifecycleRunApi", "post"): admin_out.LifecycleRunResult,
    ("LifecyclePolicyApi", "get"): admin_out.LifecyclePolicy, ("LifecyclePolicyApi", "put"): admin_out.LifecyclePolicy,
}

RESPONSES.update({
    ("DirectivesApi", "get"): res.DirectiveList, ("DirectivesApi", "post"): res.Directive,
    ("DirectiveApi", "get"): res.Directive, ("DirectiveApi", "patch"): res.Directive,
    ("DirectiveApi", "delete"): out.Deleted, ("DirectiveDeactivateApi", "post"): res.Directive,
    ("BanksApi", "get"): res.BankList, ("BanksApi", "post"): res.Bank, ("BankApi", "get"): res.Bank,
    ("BankApi", "patch"): res.Bank, ("BankApi", "delete"): res.BankDeleted,
    ("MentalModelRevisionsApi", "get"): res.RevisionList, ("MentalModelRevisionApi", "get"): res.Revision,
    ("MentalModelDiffApi", "get"): res.RevisionDiff, ("SyncPushApi", "post"): res.SyncPushResult,
    ("ChangesApi", "get"): res.ChangesPage, ("DebugRecallApi", "post"): res.DebugRecallResult,
})

# The same, for the 202 answers (work queued).
ACCEPTED_RESPONSES: dict[tuple[str, str], type[BaseModel]] = {
    ("ObservationsConsolidateApi", "post"): res.JobQueued,
}

_MODELS: dict[str, type[BaseModel]] = {}
_BODIES: set[str] = set()  # the models that are request bodies: their capped lists carry maxItems
_ERROR = {"$ref": "#/components/schemas/Error"}


def register(name: str, model: type[BaseModel], *, body: bool = False) -> None:
    """File ``model`` under ``components/schemas`` as ``name``; a request ``body``'s capped lists carry maxItems."""
    _MODELS[name] = model
    if body:
        _BODIES.add(name)


def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    _pattern_bank_ids(schema)
    required = set(schema.get("required", []))
    return [
        {"name": name, "in": "query", "required": name in required, "schema": prop}
        for name, prop in schema.get("properties", {}).items()
    ]


def _with_bank_id_pattern(parameter: dict[str, Any]) -> dict[str, Any]:
    if parameter.get("name") == "bank_id":
        parameter["schema"] = {**parameter.get("schema", {}), "type": "string", "pattern": BANK_ID_PATTERN,
                               "maxLength": 255}
    return parameter


def _pattern_bank_ids(schema: dict[str, Any]) -> None:
    """Every ``bank_id`` (and ``banks`` item) a body or query names carries Astrocyte's id rule."""
    for name, prop in schema.get("properties", {}).items():
        if name == "bank_id":
            for variant in prop.get("anyOf", [prop]):
                if variant.get("type") == "string":
                    variant.update(pattern=BANK_ID_PATTERN, maxLength=255)
        elif name == "banks":
            for variant in prop.get("anyOf", [prop]):
                if variant.get("type") == "array" and variant.get("items", {}).get("type") == "string":
                    variant["items"].update(pattern=BANK_ID_PATTERN, maxLength=255)


def _capped_lists(schema: dict[str, Any]) -> None:
    """The request caps (memoryhub.input_rules.REQUEST_CAPS) as ``maxItems`` of the lists they bound."""
    for name, prop in schema.get("properties", {}).items():
        cap = request_cap(name)
        if cap:
            for variant in prop.get("anyOf", [prop]):
                if variant.get("type") == "array":
                    variant["maxItems"] = cap


# Operations that may answer 202 with a job instead of doing the work inside the request.
ACCEPTED = {
    ("BankApi", "delete"): (
        "The bank is gone for every client; a job removes its rows (more than "
        "MEMORYHUB_BANK_DELETE_SYNC_MEMORIES memories, or async=true). Poll the Location header "
        "(/v1/jobs/{job_id}?bank_id=...)."),
}
_ACCEPTED_BODY = {"type": "object", "required": ["deleted", "accepted", "bank_id", "job_id", "state"], "properties": {
    "deleted": {"type": "boolean"}, "accepted": {"type": "boolean"}, "bank_id": {"type": "string"},
    "job_id": {"type": "integer"}, "state": {"type": "string"},
    "progress": {"type": "object", "properties": {"done": {"type": "integer"}, "total": {"type": ["integer", "null"]}}},
}}


# Operations without a token: (view, method) -> (summary, status codes other than 200).
UNAUTHENTICATED: dict[tuple[str, str], tuple[str, list[int]]] = {
    ("HealthApi", "get"): ("Database and embedder health (503 when the database cannot be reached)", [503]),
    ("LiveApi", "get"): ("The process answers", []),
    ("IngestHealthApi", "get"): ("State of the push-ingest sources", [503]),
    ("WebhookIngestApi", "post"): ("Retain a signed push from a configured webhook source",
                                   [400, 401, 404, 409, 413, 503]),
}


def _ref_or_object(model: type[BaseModel] | None) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{model.__name__}"} if model is not None else {"type": "object"}


def _unauthenticated(operation: dict[str, Any], key: tuple[str, str]) -> dict[str, Any]:
    summary, codes = UNAUTHENTICATED[key]
    operation["summary"] = summary
    operation["description"] = "No token: " + (
        "the source signs the request the way it is configured to: X-Webhook-Timestamp and "
        "X-Webhook-Signature (sha256=HMAC of \"<timestamp>.<body>\", each signature accepted once), or "
        "sha256=HMAC of the raw body in X-Astrocyte-Signature or the source's own header."
        if key[0] == "WebhookIngestApi" else "a probe anyone may call.")
    operation["parameters"] = [p for p in operation.get("parameters", []) if p.get("in") == "path"]
    operation.pop("requestBody", None)
    if key[0] == "WebhookIngestApi":
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "description": "The source's own payload; its text is what is retained"}}}}
    operation["responses"] = {"200": {"description": "OK", "content": {"application/json": {
        "schema": {"type": "object"}}}}, **{str(code): {"description": ERROR_TEXTS[code], "content": {
            "application/json": {"schema": {"type": "object"}}}} for code in codes}}
    operation["security"] = []
    return operation


class PydanticAutoSchema(AutoSchema):
    """The /v1 operations of banks; the whole API's schema class (config/openapi.py) adds the other apps'."""

    def operations_load(self) -> None:
        """Fill OPERATIONS with the operations of views imported late (their modules import this one)."""
        _sync_operations()
        _tenant_operations()

    def get_operation(self, path: str, path_regex: str, path_prefix: str, method: str,
                      registry: Any) -> dict[str, Any] | None:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        key = (type(self.view).__name__, method.lower())
        if key not in OPERATIONS:
            self.operations_load()
        if key in UNAUTHENTICATED:
            return _unauthenticated(operation, key)
        if key not in OPERATIONS:
            return operation
        body, query, permission, summary = OPERATIONS[key]
        operation["summary"] = summary
        operation["description"] = f"Needs the `{permission}` permission on the bank."
        operation["parameters"] = [_with_bank_id_pattern(p) for p in operation.get("parameters", [])
                                   if p.get("in") == "path"]
        operation.pop("requestBody", None)
        if body is not None:
            register(body.__name__, body, body=True)
            operation["requestBody"] = {"required": True, "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{body.__name__}"}}}}
        if query is not None:
            operation["parameters"] += _query_parameters(query)
        errors = {str(code): {"description": ERROR_TEXTS[code], "content": {"application/json": {"schema": _ERROR}}}
                  for code in error_codes(key, has_body=body is not None)}
        response = RESPONSES.get(key)
        accepted = ACCEPTED_RESPONSES.get(key)
        for model in (response, accepted):
            if model is not None:
                register(model.__name__, model)
        by_code = {200: response, 202: accepted}
        operation["responses"] = {**{str(code): {
            "description": "OK" if code == 200 else "Accepted: the work is queued (a job or a turn)",
            "content": {"application/json": {"schema": _ref_or_object(by_code[code])}}}
            for code in success_codes(key)}, **errors}
        if key in ACCEPTED:
            operation["responses"]["202"] = {"description": ACCEPTED[key], "content": {"application/json": {
                "schema": _ACCEPTED_BODY}}}
        operation["security"] = [{"bearerAuth": []}, {"apiKeyAuth": []}]
        return operation


def add_pydantic_components(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, model in sorted(_MODELS.items()):
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schema["title"] = name
        for def_name, definition in schema.pop("$defs", {}).items():
            schemas.setdefault(def_name, definition)
        _pattern_bank_ids(schema)
        if name in _BODIES:
            _capped_lists(schema)
        schemas[name] = schema
    schemas["Error"] = {
        "type": "object", "required": ["detail", "error"],
        "properties": {
            "detail": {"type": "string"},
            "error": {"type": "object", "required": ["code", "message"], "properties": {
                "code": {"type": "string"}, "message": {"type": "string"}, "field": {"type": "string"}}},
        },
    }
    result["components"]["securitySchemes"] = {
        "bearerAuth": {"type": "http", "scheme": "bearer"},
        "apiKeyAuth": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
    }
    return result
