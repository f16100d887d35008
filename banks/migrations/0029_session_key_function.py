"""A turn's session key as a function of its metadata (``memoryhub_session_key_of``), used by the insert
trigger of migration 0028 and by a retain that computes its context before inserting the row (so the
turn is embedded once, with its context). The rule itself is unchanged; only its home is.
"""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION memoryhub_session_key_of(metadata jsonb) RETURNS varchar
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT left(nullif(coalesce(
        CASE WHEN jsonb_typeof(metadata -> 'session_id') IN ('string', 'number')
             THEN metadata ->> 'session_id' END,
        CASE WHEN jsonb_typeof(metadata -> 'chatgpt' -> 'conversation_id') IN ('string', 'number')
             THEN 'chatgpt:' || (metadata -> 'chatgpt' ->> 'conversation_id') END,
        CASE WHEN jsonb_typeof(metadata -> 'agentos' -> 'conversation_id') IN ('string', 'number')
             THEN 'agentos:' || (metadata -> 'agentos' ->> 'conversation_id') END), ''), 255)
$$;
CREATE OR REPLACE FUNCTION memoryhub_memory_session_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.session_key := memoryhub_session_key_of(NEW.metadata);
    RETURN NEW;
END
$$;
"""

# Migration 0028's trigger function, as it was.
BACKWARD = """
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
DROP FUNCTION IF EXISTS memoryhub_session_key_of(jsonb);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("banks", "0028_conversation_context"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
