"""Full-text search in the bank's language, accents folded.

One text search configuration per language, ``memoryhub_<language>``: a copy of PostgreSQL's
own whose word tokens go through ``unaccent`` before the language's stemmer, so "café" and
"cafe" are the same lexeme (stop words, listed with their accents, are dropped first). ``banks_memory.search_config`` (a ``regconfig``) names the one a
row was indexed with and the generated ``search_vector`` is ``to_tsvector(search_config, text)``:
still immutable, still on the GIN index. A trigger sets ``search_config`` from the bank's
``config.recall.language`` on insert (every writer: the ORM, bulk COPY, imports); changing the
language re-computes existing rows (banks.services.text_search).
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

import banks.models.memories

LANGUAGES = (
    "simple", "arabic", "armenian", "basque", "catalan", "danish", "dutch", "english", "finnish", "french",
    "german", "greek", "hindi", "hungarian", "indonesian", "irish", "italian", "lithuanian", "nepali",
    "norwegian", "portuguese", "romanian", "russian", "serbian", "spanish", "swedish", "tamil", "turkish",
    "yiddish",
)

CREATE_CONFIGS = """
CREATE EXTENSION IF NOT EXISTS unaccent;
DO $$
DECLARE
    lang text;
    stemmer text;
BEGIN
    FOREACH lang IN ARRAY %s LOOP
        CONTINUE WHEN NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = lang
                                  AND cfgnamespace = 'pg_catalog'::regnamespace);
        CONTINUE WHEN EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'memoryhub_' || lang);
        stemmer := CASE WHEN lang = 'simple' THEN 'simple' ELSE lang || '_stem' END;
        EXECUTE format('CREATE TEXT SEARCH CONFIGURATION %%I (COPY = pg_catalog.%%I)', 'memoryhub_' || lang, lang);
        IF EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = stemmer AND dictinitoption LIKE '%%stopwords%%') THEN
            -- The stop-word lists are accented ("à", "étaient"): drop stop words before unaccent sees them.
            EXECUTE format('CREATE TEXT SEARCH DICTIONARY %%I (TEMPLATE = pg_catalog.simple, STOPWORDS = %%I, '
                           'ACCEPT = false)', 'memoryhub_' || lang || '_stop', lang);
            EXECUTE format('ALTER TEXT SEARCH CONFIGURATION %%I ALTER MAPPING FOR hword, hword_part, word '
                           'WITH %%I, unaccent, %%I', 'memoryhub_' || lang, 'memoryhub_' || lang || '_stop', stemmer);
        ELSE
            EXECUTE format('ALTER TEXT SEARCH CONFIGURATION %%I ALTER MAPPING FOR hword, hword_part, word '
                           'WITH unaccent, %%I', 'memoryhub_' || lang, stemmer);
        END IF;
    END LOOP;
END
$$;
""" % ("ARRAY[" + ", ".join(f"'{name}'" for name in LANGUAGES) + "]")

DROP_CONFIGS = ";\n".join(
    [f"DROP TEXT SEARCH CONFIGURATION IF EXISTS memoryhub_{name}" for name in LANGUAGES]
    + [f"DROP TEXT SEARCH DICTIONARY IF EXISTS memoryhub_{name}_stop" for name in LANGUAGES])

# Runs before the generated column is computed (PostgreSQL computes stored generated columns after
# BEFORE triggers), so a new row is indexed in its bank's language whoever inserts it.
CREATE_TRIGGER = """
CREATE FUNCTION memoryhub_memory_search_config() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_config := coalesce(
        (SELECT c.oid::regconfig FROM banks_bank b JOIN pg_ts_config c
           ON c.cfgname = 'memoryhub_' || (b.config -> 'recall' ->> 'language')
          WHERE b.id = NEW.bank_id AND pg_ts_config_is_visible(c.oid)),
        'memoryhub_english'::regconfig);
    RETURN NEW;
END
$$;
CREATE TRIGGER memory_search_config BEFORE INSERT OR UPDATE OF bank_id ON banks_memory
    FOR EACH ROW EXECUTE FUNCTION memoryhub_memory_search_config();
"""

DROP_TRIGGER = """
DROP TRIGGER IF EXISTS memory_search_config ON banks_memory;
DROP FUNCTION IF EXISTS memoryhub_memory_search_config();
"""


class Migration(migrations.Migration):
    dependencies = [("banks", "0013_recall_usage_and_ingest_state")]

    operations = [
        migrations.RunSQL(CREATE_CONFIGS, DROP_CONFIGS),
        migrations.RemoveIndex(model_name="memory", name="memory_search_gin"),
        migrations.RemoveField(model_name="memory", name="search_vector"),
        migrations.AddField(
            model_name="memory", name="search_config",
            field=banks.models.memories.RegConfigField(db_default=models.Value("memoryhub_english"), editable=False),
        ),
        migrations.AddField(
            model_name="memory", name="search_vector",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.contrib.postgres.search.SearchVector(
                    "text", config=models.F("search_config")),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(fields=["search_vector"], name="memory_search_gin"),
        ),
        migrations.RunSQL(CREATE_TRIGGER, DROP_TRIGGER),
    ]
