"""Django's PostgreSQL backend with a cheaper connection health check.

With CONN_HEALTH_CHECKS Django sends ``SELECT 1`` before the first query of every request on a reused
connection: one round trip per request, about 2 % of a recall's CPU here. A server that ends a session
(shut down, restarted, the backend killed, ``pg_terminate_backend``) writes a final message or closes
the socket, so the socket of a dead connection is readable while a healthy idle one is not. Checking
that is a system call; only when something did arrive (which may also be a harmless notice) is the
connection asked with ``SELECT 1`` as before. A server that vanished without a word (a network cut)
is found by the first query, which then fails and is answered as a database outage (503), as before.
"""

from __future__ import annotations

import select
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.postgresql import base, features
from django.db.models import Model

from memoryhub.embedded import EMBEDDED_PGDATA_MARK
from memoryhub.postgres.schema import DatabaseSchemaEditor
from memoryhub.postgres.timestamps import iso_adapters


class DatabaseFeatures(features.DatabaseFeatures):
    def allows_group_by_selected_pks_on_model(self, model: type[Model]) -> bool:
        """Django groups by a model's primary key alone and selects its other columns, which PostgreSQL
        accepts only when that key is the table's real primary key. A model whose table is keyed wider in
        the database (``DATABASE_PRIMARY_KEY``, e.g. ``("bank_id", "id")`` for bank tables, while Django
        knows ``id``) is grouped by every selected column instead."""
        if getattr(model, "DATABASE_PRIMARY_KEY", None):
            return False
        return bool(super().allows_group_by_selected_pks_on_model(model))


class DatabaseWrapper(base.DatabaseWrapper):
    features_class = DatabaseFeatures
    SchemaEditorClass = DatabaseSchemaEditor

    def get_connection_params(self) -> dict[str, Any]:
        if pgdata := self.settings_dict.get("OPTIONS", {}).get(EMBEDDED_PGDATA_MARK):
            # The settings only read configuration; the entry points start the embedded server.
            raise ImproperlyConfigured(
                f"The embedded PostgreSQL in {pgdata} was not started by this "
                "process: run MemoryHub through manage.py (make run), or set DATABASE_URL.")
        params: dict[str, Any] = super().get_connection_params()
        if "context" in params:  # timestamptz read in C (memoryhub.postgres.timestamps)
            params["context"] = iso_adapters(params["context"], self.timezone)
        return params

    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed:
            return False
        try:
            readable, _, _ = select.select([connection.fileno()], [], [], 0)
        except (OSError, ValueError):  # the socket is gone
            return False
        if not readable:
            return True
        return bool(super().is_usable())
