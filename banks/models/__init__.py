"""The MemoryHub domain. One module per aggregate; everything is re-exported here.

Keys (migration 0033, docs/scaling.md "Keys that lead with the bank"): in the database every bank table's
primary key is ``(bank_id, id)`` and every foreign key between bank tables is ``(bank_id, x_id) REFERENCES
parent (bank_id, id)``, so a row can never point into another bank. Django still knows ``id`` as the primary
key (globally unique: one identity sequence per table) and the foreign key fields as ``db_constraint=False``:
Django 5.2 cannot point a ForeignKey at a composite key, and the composite constraints live in migrations.
"""

from banks.models.access_log import MemoryAccess
from banks.models.banks import BANK_KEY, Bank, BankMembership, BankRole
from banks.models.duplicates import DuplicatePair
from banks.models.holds import LegalHold, LifecyclePolicy
from banks.models.live import MentalModel, MentalModelRevision, Observation, ObservationEvidence, WikiPage
from banks.models.memories import Entity, EntityLink, Memory, MemoryEntity, MemoryLink
from banks.models.rate_limits import RateCounter
from banks.models.records import ApiToken, AuditEvent, Job, JobState
from banks.models.tag_indexes import BankTagIndex
from banks.models.text_statistics import BankLexeme, BankTextStatistics
from banks.models.usage import BankUsage
from banks.models.webhooks import WebhookDelivery, WebhookSource

__all__ = [
    "BANK_KEY",
    "ApiToken",
    "AuditEvent",
    "Bank",
    "BankLexeme",
    "BankMembership",
    "BankRole",
    "BankTagIndex",
    "BankTextStatistics",
    "BankUsage",
    "DuplicatePair",
    "Entity",
    "EntityLink",
    "Job",
    "LegalHold",
    "LifecyclePolicy",
    "JobState",
    "Memory",
    "MemoryAccess",
    "MemoryEntity",
    "MemoryLink",
    "MentalModel",
    "MentalModelRevision",
    "Observation",
    "ObservationEvidence",
    "RateCounter",
    "WebhookDelivery",
    "WebhookSource",
    "WikiPage",
]
