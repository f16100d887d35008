"""Response bodies of the /v1/admin routes, for the OpenAPI document (views build plain dicts)."""

from __future__ import annotations

from pydantic import BaseModel


class LegalHold(BaseModel):
    hold_id: str
    bank_id: str
    reason: str
    set_at: str
    set_by: str


class HoldState(BaseModel):
    bank_id: str
    under_hold: bool
    holds: list[LegalHold]


class HoldReleased(BaseModel):
    bank_id: str
    hold_id: str
    released: bool


class HealthIssue(BaseModel):
    severity: str
    code: str
    message: str
    recommendation: str


class BankHealth(BaseModel):
    bank_id: str
    score: float
    status: str
    issues: list[HealthIssue]
    metrics: dict[str, float]
    assessed_at: str
    # False when ``metrics.memory_count`` is the estimate shown as "about N" (over 10,000 memories).
    memory_count_exact: bool
    last_retain_at: str | None
    job_backlog: int
    failed_jobs_7d: int
    legal_holds: list[str]
    last_recalled_at: str | None
    error_count: int
    last_error_at: str | None


class BankHealthList(BaseModel):
    banks: list[BankHealth]


class AdminBankList(BaseModel):
    banks: list[str]


class LifecycleAction(BaseModel):
    memory_id: str
    action: str
    reason: str


class LifecycleRunResult(BaseModel):
    archived_count: int
    deleted_count: int
    skipped_count: int
    actions: list[LifecycleAction]
    actions_truncated: bool
    job_id: int | None


class LifecyclePolicy(BaseModel):
    bank_id: str
    enabled: bool
    delete_after_days: int | None
    archive_after_days: int | None
    fact_type_overrides: dict[str, dict[str, int | None]]
    exempt_tags: list[str]
    last_run_at: str | None


class IngestSource(BaseModel):
    id: str
    source_id: str
    type: str
    status: str
    healthy: bool
    message: str
    enabled: bool
    last_delivery_at: str | None
    last_error: str | None
    last_error_at: str | None
    delivery_count: int
    error_count: int
    bank_id: str
    tags: list[str]
    created_at: str | None


class IngestSourceList(BaseModel):
    sources: list[IngestSource]
