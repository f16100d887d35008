"""Conversation turns indexed with their context (banks.services.memory_rows.contexts).

Three nullable columns (no rewrite of ``banks_memory``: PostgreSQL adds a nullable column without a
default to its catalogue only): ``session_key``, ``context`` and ``context_vector``. Two triggers keep
the derived ones whoever writes a row (the ORM, the bulk COPY, imports):

- ``memory_session_key``: the turn's session from its metadata: ``session_id`` (Astrocyte's
  convention), else the conversation of a ChatGPT or AgentOS import;
- ``memory_search_context`` (named to run after ``memory_search_config``, which sets the row's
  language first): ``to_tsvector(search_config, text || context)`` while the row has a context.

Both indexes are built concurrently and are partial (the full-text one leads with the bank, as
``memory_bank_search_gin`` does, through migration 0026's btree_gin): rows outside conversations are
not in them.
Rows stored before this migration get a session when their metadata is next written, and a context
when that or a neighbour's write refreshes them (nothing is backfilled here: no unbounded statement).
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

SESSION_TRIGGER = """
CREATE OR REPLACE FUNCTION memoryhub_memory_session_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.session_key := left(nullif(coalesce(
        CASE WHEN jsonb_typeof(NEW.metadata -> 'session_id') IN ('string', 'number')
             THEN NEW.metadata ->> 'session_id' END,
        CASE WHEN jsonb_typeof(NEW.metadata -> 'chatgpt' -> 'conversation_id') IN ('string', 'number')
             THEN 'chatgpt:' || (NEW.metadata -> 'chatgpt' ->> 'conversation_id') END,
        CASE WHEN jsonb_typeof(NEW.metadata -> 'agentos' -> 'conversation_id') IN ('string', 'number')
             THEN 'agentos:' || (NEW.metadata -> 'agentos' ->> 'conversation_id') END), ''), 255);
    RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS memory_session_key ON banks_memory;
CREATE TRIGGER memory_session_key BEFORE INSERT OR UPDATE OF metadata ON banks_memory
    FOR EACH ROW EXECUTE FUNCTION memoryhub_memory_session_key();

CREATE OR REPLACE FUNCTION memoryhub_memory_search_context() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.context_vector := CASE WHEN NEW.context IS NULL THEN NULL
                               ELSE to_tsvector(NEW.search_config, NEW.text || E'\\n' || NEW.context) END;
    RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS memory_search_context ON banks_memory;
CREATE TRIGGER memory_search_context BEFORE INSERT OR UPDATE OF text, context, search_config, bank_id
    ON banks_memory FOR EACH ROW EXECUTE FUNCTION memoryhub_memory_search_context();
"""

DROP_TRIGGERS = """
DROP TRIGGER IF EXISTS memory_session_key ON banks_memory;
DROP FUNCTION IF EXISTS memoryhub_memory_session_key();
DROP TRIGGER IF EXISTS memory_search_context ON banks_memory;
DROP FUNCTION IF EXISTS memoryhub_memory_search_context();
"""


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("banks", "0027_job_phase_resumed_by"),
    ]

    operations = [
        migrations.AddField(model_name="memory", name="session_key",
                            field=models.CharField(blank=True, editable=False, max_length=255, null=True)),
        migrations.AddField(model_name="memory", name="context",
                            field=models.TextField(blank=True, editable=False, null=True)),
        migrations.AddField(model_name="memory", name="context_vector",
                            field=django.contrib.postgres.search.SearchVectorField(blank=True, editable=False,
                                                                                   null=True)),
        migrations.RunSQL(SESSION_TRIGGER, DROP_TRIGGERS),
        AddIndexConcurrently(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                condition=models.Q(context_vector__isnull=False), fields=["bank", "context_vector"],
                gin_pending_list_limit=256, name="memory_bank_context_gin"),
        ),
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(condition=models.Q(session_key__isnull=False),
                               fields=["bank", "session_key", "created_at", "id"], name="memory_session_turns"),
        ),
    ]
