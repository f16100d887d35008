"""Response bodies of the /v1 resources that are MemoryHub's own (banks, directives, revisions, jobs,
sync, agent tools), as pydantic models for the OpenAPI document. The views build plain dicts with
these keys; tests/api_fuzz checks every answer against them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from banks.api.responses import MentalModel, RecallTrace


class Directive(MentalModel):
    rule_text: str


class DirectiveList(BaseModel):
    directives: list[Directive]


class BankCounts(BaseModel):
    memories: int
    observations: int
    mental_models: int
    directives: int


class Bank(BaseModel):
    bank_id: str
    name: str
    description: str
    embedding_provider: str | None
    dedup_threshold: float | None
    config: dict[str, Any]
    created_at: str | None
    updated_at: str | None
    last_activity_at: str | None
    counts: BankCounts | None = None


class BankList(BaseModel):
    banks: list[Bank]


class BankDeleted(BaseModel):
    deleted: bool
    bank_id: str


class RevisionSummary(BaseModel):
    revision: int
    action: str
    author: str
    created_at: str | None
    title: str
    scope: str
    change_summary: dict[str, Any] | None


class Revision(RevisionSummary):
    content: str
    structured_doc: dict[str, Any] | None
    source_ids: list[str]
    operations: list[Any] | None


class RevisionList(BaseModel):
    model_id: str
    revisions: list[RevisionSummary]


class DiffRow(BaseModel):
    kind: str
    left: str | None
    right: str | None
    left_no: int | None
    right_no: int | None


class RevisionDiff(BaseModel):
    # "from" is a Python keyword: the field is named by its alias.
    model_config = ConfigDict(populate_by_name=True)

    model_id: str
    from_: int = Field(alias="from")
    to: int
    unified: str
    rows: list[DiffRow]
    sections_added: list[str]
    sections_removed: list[str]
    sections_changed: list[str]


class JobProgress(BaseModel):
    done: int
    total: int | None
    percent: float | None


class Job(BaseModel):
    job_id: int
    kind: str
    state: str
    bank_id: str | None
    progress: JobProgress
    counts: dict[str, Any]
    errors: list[Any]
    result: dict[str, Any] | None
    message: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    cancel_requested: bool


class JobQueued(BaseModel):
    job_id: int
    state: str
    kind: str


class TurnQueued(BaseModel):
    queued: bool
    turn_id: str
    bank_id: str


class SyncPushResult(BaseModel):
    results: list[dict[str, Any]]


class ChangesPage(BaseModel):
    changes: list[dict[str, Any]]
    next_cursor: str | None
    has_more: bool


class DebugRecallResult(BaseModel):
    trace: RecallTrace
    result_count: int


class Tool(BaseModel):
    name: str
    permission: str | None
    description: str


class ToolList(BaseModel):
    tools: list[Tool]


__all__ = ["Bank", "BankDeleted", "BankList", "ChangesPage", "DebugRecallResult", "Directive", "DirectiveList",
           "Job", "JobQueued", "Revision", "RevisionDiff", "RevisionList", "SyncPushResult", "ToolList", "TurnQueued"]
