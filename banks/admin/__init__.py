"""The Django admin over MemoryHub's records, built to stay fast on banks of millions of rows
(see banks.admin.scale) and to change nothing except through the services, so every change is audited."""

from banks.admin import memories, records

__all__ = ["memories", "records"]
