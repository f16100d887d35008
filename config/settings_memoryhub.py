"""MemoryHub's own settings, every one read from the environment (memoryhub.env): periodic work and jobs,
transfers inside a request, providers, recall, the rules of a memory, archive files. config/settings.py
reads them in; docs/operations.md lists the variables."""

from __future__ import annotations

import os

from config.install import EMBEDDED_DATABASE, VAR_DIR
from memoryhub.env import env_bool, env_bool_or_auto, env_float, env_int, env_str

# Periodic tasks, run by the beat process `manage.py serve` supervises (in production: one
# `celery -A config beat`). Every bank's lifecycle policy, once a day by default; jobs whose worker
# died are failed (and offered resume), orphan queued jobs and export temp files cleaned.
MEMORYHUB_LIFECYCLE_SWEEP_SECONDS = env_int("MEMORYHUB_LIFECYCLE_SWEEP_SECONDS", 24 * 3600)
# Banks whose near-duplicates were searched once are searched again (incrementally) this often.
MEMORYHUB_DUPLICATE_RESCAN_SECONDS = env_int("MEMORYHUB_DUPLICATE_RESCAN_SECONDS", 24 * 3600)
# Banks of at least MEMORYHUB_LEXEME_STATISTICS_MIN live memories keep their frequent words' counts for
# the keyword arm (banks.models.text_statistics), checked this often and counted again when they drift.
MEMORYHUB_LEXEME_STATISTICS_MIN = env_int("MEMORYHUB_LEXEME_STATISTICS_MIN", 20_000)
MEMORYHUB_LEXEME_STATISTICS_SECONDS = env_int("MEMORYHUB_LEXEME_STATISTICS_SECONDS", 900)
# In those banks, each tag on at least MEMORYHUB_TAG_INDEX_MIN live memories (and at most a fifth of the bank)
# gets an HNSW index of its own, up to MEMORYHUB_TAG_INDEXES_PER_BANK tags, largest first, and together no
# more entries than the bank has memories (banks.services.tag_indexes): recall filtered on one such tag
# walks it. Each indexed memory costs its vector's index entry again (about 2 KB at 384 dimensions).
# Checked this often; 0 tags per bank turns it off.
MEMORYHUB_TAG_INDEX_MIN = env_int("MEMORYHUB_TAG_INDEX_MIN", 10_000)
MEMORYHUB_TAG_INDEXES_PER_BANK = env_int("MEMORYHUB_TAG_INDEXES_PER_BANK", 64)
MEMORYHUB_TAG_INDEX_SECONDS = env_int("MEMORYHUB_TAG_INDEX_SECONDS", 900)
# Jobs: every running job's pulse writes its heartbeat this often (banks.services.job_pulse); one silent for
# MEMORYHUB_JOB_STALE_SECONDS has lost its worker, and the sweep (every MEMORYHUB_JOB_SWEEP_SECONDS) fails it
# and resumes it, at most MEMORYHUB_JOB_AUTO_RESUMES times in a row. A job asked to cancel that has not stopped
# after MEMORYHUB_JOB_CANCEL_GRACE_SECONDS has its statement cancelled, and its session ended after twice that.
MEMORYHUB_JOB_PULSE_SECONDS = env_float("MEMORYHUB_JOB_PULSE_SECONDS", 5.0)
MEMORYHUB_JOB_STALE_SECONDS = env_int("MEMORYHUB_JOB_STALE_SECONDS", 45)
MEMORYHUB_JOB_SWEEP_SECONDS = env_int("MEMORYHUB_JOB_SWEEP_SECONDS", 15)
MEMORYHUB_JOB_AUTO_RESUMES = env_int("MEMORYHUB_JOB_AUTO_RESUMES", 3)
MEMORYHUB_JOB_CANCEL_GRACE_SECONDS = env_float("MEMORYHUB_JOB_CANCEL_GRACE_SECONDS", 5.0)
# Transfers done inside a request hold a web worker: past these sizes /v1/import and /v1/export answer 413 and
# ask for "async": true (a job): archives of more lines (or, without a count in their header, bigger files),
# whole-bank restores of more decompressed bytes, whole-bank and non-AMA exports of banks with more memories.
MEMORYHUB_SYNC_IMPORT_MAX_LINES = env_int("MEMORYHUB_SYNC_IMPORT_MAX_LINES", 2000)
MEMORYHUB_SYNC_TRANSFER_MAX_BYTES = env_int("MEMORYHUB_SYNC_TRANSFER_MAX_BYTES", 32 * 1024 * 1024)
MEMORYHUB_SYNC_EXPORT_MAX_MEMORIES = env_int("MEMORYHUB_SYNC_EXPORT_MAX_MEMORIES", 20_000)
# The longest line a whole-bank archive may hold (a longer one is refused, never read into memory).
MEMORYHUB_BANK_ARCHIVE_MAX_LINE_BYTES = env_int("MEMORYHUB_BANK_ARCHIVE_MAX_LINE_BYTES", 16 * 1024 * 1024)
# A bank with more memories than this is deleted by a job (202) rather than inside the request.
MEMORYHUB_BANK_DELETE_SYNC_MEMORIES = env_int("MEMORYHUB_BANK_DELETE_SYNC_MEMORIES", 5000)
# Banks of the shared vector graph that grew to MEMORYHUB_OWN_VECTOR_INDEX_ROWS are moved onto their own this often.
MEMORYHUB_OWN_VECTOR_INDEX_SECONDS = env_int("MEMORYHUB_OWN_VECTOR_INDEX_SECONDS", 300)
# How long the per-memory access log keeps a read (0: no log at all), and how often the beat prunes it.
MEMORYHUB_ACCESS_LOG_DAYS = env_int("MEMORYHUB_ACCESS_LOG_DAYS", 90)
MEMORYHUB_ACCESS_LOG_PRUNE_SECONDS = env_int("MEMORYHUB_ACCESS_LOG_PRUNE_SECONDS", 3600)
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "banks-lifecycle-sweep": {"task": "banks.lifecycle_sweep", "schedule": float(MEMORYHUB_LIFECYCLE_SWEEP_SECONDS)},
    "banks-duplicate-rescan": {"task": "banks.rescan_duplicates", "schedule": float(MEMORYHUB_DUPLICATE_RESCAN_SECONDS)},
    "portability-sweep-jobs": {"task": "portability.sweep_jobs", "schedule": float(MEMORYHUB_JOB_SWEEP_SECONDS)},
    "banks-lexeme-statistics": {"task": "banks.count_lexemes", "schedule": float(MEMORYHUB_LEXEME_STATISTICS_SECONDS)},
    "banks-tag-indexes": {"task": "banks.index_tags", "schedule": float(MEMORYHUB_TAG_INDEX_SECONDS)},
    "banks-access-log-prune": {"task": "banks.prune_access_log",
                               "schedule": float(MEMORYHUB_ACCESS_LOG_PRUNE_SECONDS)},
    "banks-vector-indexes": {"task": "banks.grow_vector_indexes",
                             "schedule": float(MEMORYHUB_OWN_VECTOR_INDEX_SECONDS)},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# Providers.
MEMORYHUB_EMBEDDINGS = env_str("MEMORYHUB_EMBEDDINGS", "minilm")
MEMORYHUB_EMBEDDINGS_URL = env_str("MEMORYHUB_EMBEDDINGS_URL", "https://api.openai.com/v1")
MEMORYHUB_EMBEDDINGS_API_KEY = env_str("MEMORYHUB_EMBEDDINGS_API_KEY")
MEMORYHUB_EMBEDDINGS_DIMENSIONS = env_int("MEMORYHUB_EMBEDDINGS_DIMENSIONS", 384)
# BLAS threads the local model may use per call (0: as many as BLAS likes).
MEMORYHUB_EMBED_THREADS = env_int("MEMORYHUB_EMBED_THREADS", 1)
# How MiniLM runs: "auto" (ONNX Runtime when installed, else numpy), "onnx" or "numpy" (banks.providers.minilm).
MEMORYHUB_MINILM_RUNTIME = env_str("MEMORYHUB_MINILM_RUNTIME", "auto")
# MiniLM's weights on ONNX Runtime: "auto" (int8 on a CPU with int8 dot products or AVX2, else float), "int8" or
# "float" (banks.providers.minilm_onnx.weights_for, docs/benchmarks.md).
MEMORYHUB_MINILM_WEIGHTS = env_str("MEMORYHUB_MINILM_WEIGHTS", "auto")
# Usage counters are written by a background thread this often (0: in the request; banks.services.usage).
MEMORYHUB_USAGE_FLUSH_SECONDS = env_float("MEMORYHUB_USAGE_FLUSH_SECONDS", 1.0)
# A fresh install with N > 0 creates the bank tables hash-partitioned by bank_id into N partitions, so
# PostgreSQL refuses any key without bank_id, as Citus would (banks migration 0034, docs/scaling.md). Off: 0.
MEMORYHUB_BANK_PARTITIONS = env_int("MEMORYHUB_BANK_PARTITIONS", 0)
# An import of this many memories or more moves the bank onto its own HNSW index, built after the
# load (docs/scaling.md); the build's memory and parallel workers (session settings, for that build only).
MEMORYHUB_OWN_VECTOR_INDEX_MIN = env_int("MEMORYHUB_OWN_VECTOR_INDEX_MIN", 20_000)
# A bank of the shared graph that grew to this many live memories moves onto its own index at the next
# periodic pass (MEMORYHUB_OWN_VECTOR_INDEX_SECONDS, 300): reading it exactly or walking the shared graph
# for it costs more than walking its own (banks.services.vector_indexes.bank_vector_indexes_grow).
MEMORYHUB_OWN_VECTOR_INDEX_ROWS = env_int("MEMORYHUB_OWN_VECTOR_INDEX_ROWS", 2_000)
# hnsw.ef_search of recall's graph walk on a bank's own index (banks.vectors.walk_breadth); wider finds
# more of the true nearest neighbours, at some milliseconds per question at a million rows.
MEMORYHUB_OWN_INDEX_EF_SEARCH = env_int("MEMORYHUB_OWN_INDEX_EF_SEARCH", 600)
# Recall's semantic arm runs on a second connection beside the other arms (memoryhub.read_beside): auto (the
# default) while a core is idle, 1 always, 0 never (one after another).
MEMORYHUB_READ_BESIDE = env_bool_or_auto("MEMORYHUB_READ_BESIDE")
# Most rows a semantic search reads and ranks exactly instead of walking the graph; it reads only where that
# costs less than the walk (banks.selectors.recall_exact); 0 always walks.
MEMORYHUB_EXACT_SEARCH_ROWS = env_int("MEMORYHUB_EXACT_SEARCH_ROWS", 30_000)


def _index_build_memory() -> str:
    """An eighth of this machine's memory (256 MB to 4 GB) for the embedded server, which runs here; a
    remote server's memory is unknown from here, so 512 MB. At 1M vectors of 384 dimensions the HNSW graph
    needs about 2 GB: a build that outgrows its memory goes on on disk, several times slower."""
    if not EMBEDDED_DATABASE:
        return "512MB"
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "512MB"
    return f"{min(4096, max(256, total // 8 // (1 << 20)))}MB"


MEMORYHUB_INDEX_BUILD_MEMORY = env_str("MEMORYHUB_INDEX_BUILD_MEMORY", _index_build_memory())
MEMORYHUB_INDEX_BUILD_WORKERS = env_int("MEMORYHUB_INDEX_BUILD_WORKERS", min(7, max(2, (os.cpu_count() or 2) - 1)))
# A big import stores memories first and fills their vectors after the load when embedding is slower
# than storing: "auto" (every embedder but hashing), "always" or "never".
MEMORYHUB_IMPORT_DEFER_VECTORS = env_str("MEMORYHUB_IMPORT_DEFER_VECTORS", "auto")
# Worker processes that embed an import's memories when the archive carries no vectors (local embedders);
# 1 embeds in the importer's own process. One per core: embedding in the importer's process took its
# interpreter lock from the thread writing batches (100k-line import on two cores: batches stored in
# 17.3 s with one worker, that is in-process, 13.0 s with two).
MEMORYHUB_EMBED_WORKERS = env_int("MEMORYHUB_EMBED_WORKERS", max(1, os.cpu_count() or 1))
MEMORYHUB_LLM = env_str("MEMORYHUB_LLM", "extractive")
MEMORYHUB_LLM_URL = env_str("MEMORYHUB_LLM_URL", "https://api.openai.com/v1")
MEMORYHUB_LLM_API_KEY = env_str("MEMORYHUB_LLM_API_KEY")
MEMORYHUB_PROVIDER_TIMEOUT = env_float("MEMORYHUB_PROVIDER_TIMEOUT", 30.0)
# Remote provider calls (embeddings, chat model) retry a 429, a 5xx or a timeout this many times, waiting
# what Retry-After asks, at most this many seconds per wait (banks.providers.base).
MEMORYHUB_PROVIDER_RETRIES = env_int("MEMORYHUB_PROVIDER_RETRIES", 2)
MEMORYHUB_PROVIDER_RETRY_MAX_WAIT = env_float("MEMORYHUB_PROVIDER_RETRY_MAX_WAIT", 5.0)
# Optional rerank stage of recall (banks opt in with config.recall.rerank); a reranker slower than
# its timeout is skipped and recall answers in the fused order.
MEMORYHUB_RERANK = env_str("MEMORYHUB_RERANK", "none")
MEMORYHUB_RERANK_URL = env_str("MEMORYHUB_RERANK_URL")
MEMORYHUB_RERANK_API_KEY = env_str("MEMORYHUB_RERANK_API_KEY")
MEMORYHUB_RERANK_TIMEOUT = env_float("MEMORYHUB_RERANK_TIMEOUT", 2.0)
# Optional query expansion through MEMORYHUB_LLM (banks opt in with config.recall.expand).
MEMORYHUB_EXPAND_TIMEOUT = env_float("MEMORYHUB_EXPAND_TIMEOUT", 3.0)

# Memory rules.
MEMORYHUB_MAX_CONTENT_CHARS = env_int("MEMORYHUB_MAX_CONTENT_CHARS", 50_000)
MEMORYHUB_MAX_TAGS = env_int("MEMORYHUB_MAX_TAGS", 100)
MEMORYHUB_MAX_METADATA_BYTES = env_int("MEMORYHUB_MAX_METADATA_BYTES", 64 * 1024)
MEMORYHUB_DEDUP_THRESHOLD = env_float("MEMORYHUB_DEDUP_THRESHOLD", 0.95)
MEMORYHUB_MAX_RESULT_LIMIT = env_int("MEMORYHUB_MAX_RESULT_LIMIT", 1000)
# Items one request may list (memoryhub.input_rules.REQUEST_CAPS); over a cap is a 400 naming the field.
MEMORYHUB_MAX_BANKS_PER_REQUEST = env_int("MEMORYHUB_MAX_BANKS_PER_REQUEST", 100)  # banks of one recall
MEMORYHUB_MAX_TAGS_PER_REQUEST = env_int("MEMORYHUB_MAX_TAGS_PER_REQUEST", 1000)  # tags to filter or forget by
MEMORYHUB_MAX_IDS_PER_REQUEST = env_int("MEMORYHUB_MAX_IDS_PER_REQUEST", 10_000)  # memory ids of one forget
MEMORYHUB_MAX_DELTA_OPERATIONS = env_int("MEMORYHUB_MAX_DELTA_OPERATIONS", 1000)  # per mental-model update
MEMORYHUB_MAX_ENTITY_IDS = env_int("MEMORYHUB_MAX_ENTITY_IDS", 1000)  # per graph neighbours call
MEMORYHUB_GRAPH_MAX_DEPTH = env_int("MEMORYHUB_GRAPH_MAX_DEPTH", 6)
MEMORYHUB_AUTO_CREATE_BANKS = env_bool("MEMORYHUB_AUTO_CREATE_BANKS", True)

# Portability: no roots means no file access over HTTP or the UI (fail closed). On one machine
# (embedded database) a new user gets one root under var/ (made by the entry points) so the transfer
# screen works at once; a set variable replaces it (``off``: no file access), and a deployment with
# DATABASE_URL must choose its own.
PORTABILITY_ROOTS_OFF = "off"


def _portability_roots() -> tuple[str, bool]:
    """The roots, and whether they are the embedded default rather than the operator's choice."""
    for name in ("MEMORYHUB_PORTABILITY_ROOTS", "ASTROCYTE_PORTABILITY_ROOTS"):
        if chosen := env_str(name):
            return ("" if chosen.lower() == PORTABILITY_ROOTS_OFF else chosen), False
    if not EMBEDDED_DATABASE:
        return "", False
    return str(VAR_DIR / "archives"), True


# The default does not bind the management commands: an operator at the shell exports wherever
# they like unless roots were chosen explicitly (portability.management.commands._cli).
MEMORYHUB_PORTABILITY_ROOTS, MEMORYHUB_PORTABILITY_ROOTS_DEFAULTED = _portability_roots()
MEMORYHUB_MAX_UPLOAD_BYTES = env_int("MEMORYHUB_MAX_UPLOAD_BYTES", 2 * 1024 * 1024 * 1024)
# A gzip archive stops being read once it inflates past this (a zip bomb gets a clear error).
MEMORYHUB_MAX_DECOMPRESSED_BYTES = env_int("MEMORYHUB_MAX_DECOMPRESSED_BYTES", 8 * 1024 * 1024 * 1024)
MEMORYHUB_MAX_ARCHIVE_LINE_BYTES = env_int("MEMORYHUB_MAX_ARCHIVE_LINE_BYTES", 10 * 1024 * 1024)
MEMORYHUB_MAX_JSON_DOCUMENT_BYTES = env_int("MEMORYHUB_MAX_JSON_DOCUMENT_BYTES", 500 * 1024 * 1024)
