"""Embedding and language-model providers, chosen by MEMORYHUB_EMBEDDINGS / MEMORYHUB_LLM."""

from banks.providers.base import ProviderError, ProviderTimeout
from banks.providers.embeddings import Embedder, bank_embedder, get_embedder
from banks.providers.llm import LanguageModel, extraction_is_remote, get_llm

__all__ = ["Embedder", "bank_embedder", "extraction_is_remote", "LanguageModel", "ProviderError", "ProviderTimeout", "get_embedder", "get_llm"]
