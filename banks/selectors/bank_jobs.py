"""Jobs of a bank that is being (or has been) deleted: the bank row is hidden or gone, the job remains."""

from __future__ import annotations

from banks.access import Principal
from banks.models import Job
from memoryhub.errors import AccessDenied, BankNotFound, NotFound

DELETION_KIND = "bank_delete"


def bank_deletion_job(*, principal: Principal, bank_id: str, job_id: int) -> Job:
    """The deletion job ``job_id`` of ``bank_id``, for a caller holding ``admin`` on that bank id."""
    if "admin" not in principal.permissions_for(bank_id):
        if "read" in principal.permissions_for(bank_id):
            raise BankNotFound(bank_id)
        raise AccessDenied(principal.label, "read", bank_id)
    job = Job.objects.select_related("bank").filter(pk=job_id, kind=DELETION_KIND, params__bank_id=bank_id).first()
    if job is None:
        raise NotFound(f"job {job_id} not found")
    return job


def deletions_in_progress(principal: Principal, limit: int = 20) -> list[Job]:
    """Unfinished bank deletions the caller may follow: every one for a superuser, else those of banks
    it administers (its membership lasts until the bank row goes, at the very end)."""
    jobs = Job.objects.filter(kind=DELETION_KIND).exclude(state__in=Job.FINISHED)
    if not principal.is_superuser:
        if principal.user_id is None:
            return []
        jobs = jobs.filter(bank__memberships__user_id=principal.user_id, bank__memberships__role="admin")
    return list(jobs.order_by("-created_at")[:limit])
