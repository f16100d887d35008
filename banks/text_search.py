"""Full-text search languages of a bank: which stemmer its memories and questions go through.

Pure rules (no database). Each language has a text search configuration of its own,
``memoryhub_<language>``, created by migration 0012: word tokens are folded through
``unaccent`` first, then the language's Snowball stemmer (``simple`` only lowercases). A
bank names its language in ``config["recall"]["language"]``; every memory row carries the
configuration it was indexed with (``search_config``), and the keyword arm turns a question
into lexemes with that same configuration.
"""

from __future__ import annotations

from typing import Any

from memoryhub.errors import InvalidInput

# Snowball stemmers that ship with PostgreSQL 15+ (plus "simple": no stemming, no stop words).
LANGUAGES = (
    "simple", "arabic", "armenian", "basque", "catalan", "danish", "dutch", "english", "finnish", "french",
    "german", "greek", "hindi", "hungarian", "indonesian", "irish", "italian", "lithuanian", "nepali",
    "norwegian", "portuguese", "romanian", "russian", "serbian", "spanish", "swedish", "tamil", "turkish",
    "yiddish",
)
DEFAULT_LANGUAGE = "english"
CONFIG_PREFIX = "memoryhub_"
# The job that re-indexes a large bank after its language changed.
REINDEX_JOB_KIND = "search_language"


def config_name(language: str | None) -> str:
    """The text search configuration of a language (unknown or missing: the default's)."""
    return CONFIG_PREFIX + (language if language in LANGUAGES else DEFAULT_LANGUAGE)


def bank_language(config: dict[str, Any] | None) -> str:
    """The language a bank's ``config`` names, or the default."""
    recall = (config or {}).get("recall")
    language = recall.get("language") if isinstance(recall, dict) else None
    return language if isinstance(language, str) and language in LANGUAGES else DEFAULT_LANGUAGE


def check_language(config: dict[str, Any]) -> None:
    """Refuse a ``config`` whose ``recall.language`` is not one of LANGUAGES (400 naming it)."""
    recall = config.get("recall")
    if recall is None:
        return
    if not isinstance(recall, dict):
        raise InvalidInput("must be an object", field="config.recall")
    if "language" not in recall:
        return
    language = recall["language"]
    if not isinstance(language, str) or language not in LANGUAGES:
        raise InvalidInput(f"unknown language {language!r} (one of: {', '.join(LANGUAGES)})",
                           field="config.recall.language")


def with_language(config: dict[str, Any] | None, language: str) -> dict[str, Any]:
    """A copy of a bank's ``config`` naming ``language`` (everything else kept)."""
    updated = dict(config or {})
    recall = updated.get("recall")
    updated["recall"] = {**(recall if isinstance(recall, dict) else {}), "language": language}
    return updated
