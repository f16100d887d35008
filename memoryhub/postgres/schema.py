"""Django's PostgreSQL schema editor, with the online index recipe for a table partitioned by bank.

On a partitioned install (``MEMORYHUB_BANK_PARTITIONS``, docs/scaling.md) every bank table is partitioned,
and PostgreSQL refuses ``CREATE INDEX CONCURRENTLY`` and ``DROP INDEX CONCURRENTLY`` on a partitioned table,
while a migration adds its indexes concurrently (``AddIndexConcurrently``; docs/operations.md). So a
concurrent index on a partitioned table is made the way PostgreSQL documents for one: the parent's index
alone (``ON ONLY``: invalid, nothing built), each partition's built ``CONCURRENTLY`` and attached to it,
after which the parent's is valid. Dropping one is a plain ``DROP INDEX`` (a brief lock, no scan). Any
other table is left to Django as before.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import schema


class DatabaseSchemaEditor(schema.DatabaseSchemaEditor):
    def _partitions(self, table: str) -> list[str]:
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                           "JOIN pg_class p ON p.oid = i.inhparent "
                           "WHERE i.inhparent = to_regclass(%s) AND p.relkind = 'p' ORDER BY c.relname", [table])
            return [str(row[0]) for row in cursor.fetchall()]

    def add_index(self, model: Any, index: Any, concurrently: bool = False) -> None:
        table = model._meta.db_table
        partitions = self._partitions(table) if concurrently else []
        if not partitions:
            super().add_index(model, index, concurrently=concurrently)
            return
        sql = str(index.create_sql(model, self, concurrently=False))
        on_table = f" ON {self.quote_name(table)} "
        self.execute(sql.replace(on_table, f" ON ONLY {self.quote_name(table)} ", 1), params=None)
        for partition in partitions:
            suffix = partition[partition.rindex("_p"):] if "_p" in partition else f"_{partition}"
            child = index.name[:63 - len(suffix)] + suffix
            statement = sql.replace(self.quote_name(index.name), self.quote_name(child), 1) \
                .replace(on_table, f" ON {self.quote_name(partition)} ", 1) \
                .replace(" INDEX ", " INDEX CONCURRENTLY ", 1)
            self.execute(statement, params=None)
            self.execute(f"ALTER INDEX {self.quote_name(index.name)} ATTACH PARTITION {self.quote_name(child)}",
                         params=None)

    def remove_index(self, model: Any, index: Any, concurrently: bool = False) -> None:
        if concurrently and self._partitions(model._meta.db_table):
            concurrently = False
        super().remove_index(model, index, concurrently=concurrently)
