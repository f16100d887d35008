"""The MemoryHub domain. One module per aggregate; everything is re-exported here."""

from banks.models.access_log import MemoryAccess
from banks.models.banks import Bank, BankMembership, BankRole
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
