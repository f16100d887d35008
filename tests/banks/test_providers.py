"""Providers: the hashing embedder and extractive model, and the HTTP ones against a local server."""

from __future__ import annotations

import pytest

from banks.providers.base import ProviderError, ProviderTimeout
from banks.providers.embeddings import HashingEmbedder, OpenAICompatibleEmbedder, build_embedder, cosine
from banks.providers.extractive import ExtractiveLanguageModel
from banks.providers.llm import OpenAICompatibleLanguageModel, build_llm
from banks.providers.llm_types import Passage
from tests.fakes import FakeOpenAI


def test_hashing_is_deterministic_normalised_and_similar_for_near_texts():
    embedder = HashingEmbedder(384)
    a = embedder.embed_one("The deploy freezes on Fridays")
    assert a == HashingEmbedder(384).embed_one("The deploy freezes on Fridays")
    assert len(a) == 384 and abs(sum(x * x for x in a) - 1.0) < 1e-9
    near = embedder.embed_one("The deploy freezes on Fridays!")
    far = embedder.embed_one("Bob likes sailing in Greece")
    assert cosine(a, near) > 0.95 > cosine(a, far)
    assert embedder.embed_one("   ")[0] == 1.0


def test_openai_embedder_calls_the_endpoint(openai_server):
    embedder = OpenAICompatibleEmbedder("m", url=openai_server, api_key="k", dimensions=4, timeout=5)
    assert embedder.embed(["a", "b"]) == [[0.5, 0.5, 0.0, 0.0]] * 2
    assert FakeOpenAI.requests[0]["auth"] == "Bearer k"
    assert FakeOpenAI.requests[0]["body"] == {"model": "m", "input": ["a", "b"]}


def test_openai_embedder_rejects_wrong_dimensions(openai_server):
    embedder = OpenAICompatibleEmbedder("m", url=openai_server, api_key="", dimensions=8, timeout=5)
    with pytest.raises(ProviderError, match="wrong size"):
        embedder.embed(["a"])


def test_slow_provider_times_out_with_a_clear_error(openai_server):
    FakeOpenAI.delay = 1.0
    embedder = OpenAICompatibleEmbedder("m", url=openai_server, api_key="", dimensions=4, timeout=0.2)
    with pytest.raises(ProviderTimeout, match="did not answer within 0.2 s"):
        embedder.embed(["a"])


def test_provider_http_error_is_reported(openai_server):
    FakeOpenAI.status = 500
    with pytest.raises(ProviderError, match="HTTP 500"):
        OpenAICompatibleEmbedder("m", url=openai_server, api_key="", dimensions=4, timeout=5).embed(["a"])


def test_unreachable_provider_is_reported():
    with pytest.raises(ProviderError, match="unreachable"):
        OpenAICompatibleEmbedder("m", url="http://127.0.0.1:9", api_key="", dimensions=4, timeout=2).embed(["a"])


def test_openai_llm_answers_and_keeps_only_known_citations(openai_server):
    llm = OpenAICompatibleLanguageModel("gpt", url=openai_server, api_key="", timeout=5)
    answer = llm.answer("What does Alice drink?", [Passage("m1", "Alice prefers tea.")])
    assert answer.text == "Alice prefers tea." and answer.cited_ids == ["m1"] and answer.confidence == 0.8
    assert [e.name for e in llm.extract_entities("Alice")] == ["Alice"]
    assert FakeOpenAI.requests[0]["body"]["response_format"] == {"type": "json_object"}


def test_extractive_answer_cites_the_memories_it_used():
    llm = ExtractiveLanguageModel()
    answer = llm.answer("Which theme does the customer prefer?", [
        Passage("m1", "The customer prefers the dark theme. They read email weekly.", 0.03),
        Passage("m2", "Bob likes sailing.", 0.01),
    ])
    assert answer.text.startswith("The customer prefers the dark theme.")
    assert answer.cited_ids[0] == "m1"
    assert 0 < answer.confidence <= 1
    assert llm.answer("x", []).cited_ids == []


def test_extractive_entities_skip_sentence_initial_words():
    names = {e.name for e in ExtractiveLanguageModel().extract_entities("Yesterday Alice Smith joined Acme Corp.")}
    assert names == {"Alice Smith", "Acme Corp"}


@pytest.mark.parametrize(("text", "expected"), [
    # A name that opens a sentence is a name; the word before it ended the previous sentence.
    ("Only the chain. Tomasz from the corner shop fixed it.", {"Tomasz"}),
    ("Kasimir said Biscuit turned twelve last week.", {"Kasimir", "Biscuit"}),
    ("Priyanka keeps sending photos from Lisbon.", {"Priyanka", "Lisbon"}),
    # A name after a title is the name, without the title, whether or not the title ends in a full stop.
    ("The new teacher is Mr. Okafor.", {"Okafor"}),
    ("Dr. Jane Smith called. Aunt Dorota came by.", {"Jane Smith", "Dorota"}),
    # Words that open sentences only because sentences open with something stay out.
    ("Through Halina, a friend of my cousin.", {"Halina"}),
    ("Started Dmitri's saga properly. Cleaned the gutters. Finally done.", {"Dmitri"}),
    ("Enjoy your trip to Rome! I'm fine. Don't worry. It's late. Good. Sounds great.", {"Rome"}),
    ("Monday was rough. March is cold. Try Redis. She called.", {"Redis"}),
])
def test_extractive_entities_take_names_that_open_sentences_or_follow_titles(text, expected):
    assert {e.name for e in ExtractiveLanguageModel().extract_entities(text)} == expected


def test_a_name_after_a_title_is_a_person():
    found = {e.name: e.entity_type for e in ExtractiveLanguageModel().extract_entities("We met Mr. Okafor.")}
    assert found == {"Okafor": "PERSON"}


def test_unknown_provider_names_are_refused():
    with pytest.raises(ProviderError, match="Unknown embeddings provider"):
        build_embedder("word2vec")
    with pytest.raises(ProviderError, match="Unknown language model provider"):
        build_llm("clippy")


@pytest.mark.parametrize(("text", "expected"), [
    ("The invoice service runs on Postgres in Berlin.", {"Postgres": "PRODUCT", "Berlin": "LOCATION"}),
    ("We met Priya Raman and Marcus in Lisbon.", {"Priya Raman": "PERSON", "Marcus": "PERSON",
                                                   "Lisbon": "LOCATION"}),
    ("The Billing Service belongs to Acme Corp.", {"Billing Service": "PRODUCT", "Acme Corp": "ORG"}),
    ("Logs go to Grafana and Zorblat.", {"Grafana": "PRODUCT", "Zorblat": "OTHER"}),
])
def test_extractive_entity_types_are_not_all_people(text, expected):
    from banks.providers.extractive import ExtractiveLanguageModel

    found = {e.name: e.entity_type for e in ExtractiveLanguageModel().extract_entities(text)}
    assert {k: found.get(k) for k in expected} == expected, found


def test_the_hashing_embedder_gives_exactly_what_the_dense_formula_gives():
    """It sums and divides only the buckets a text touches; the result must not move by a bit, or
    vectors already stored would stop matching the questions asked of them."""
    import math

    from banks.providers.embeddings import HashingEmbedder, _bucket
    from banks.vectors import vector_literal

    def dense(text: str, dims: int = 384) -> list[float]:
        import re

        vector = [0.0] * dims
        words = [w.lower() for w in re.findall(r"\w+", text)]
        features = [(f"w:{w}", 1.0) for w in words]
        features += [(f"b:{a} {b}", 0.5) for a, b in zip(words, words[1:], strict=False)]
        for word in words:
            padded = f"<{word}>"
            features += [(f"c:{padded[i:i + 3]}", 0.25) for i in range(len(padded) - 2)]
        for feature, weight in features:
            index, sign = _bucket(feature, dims)
            vector[index] += sign * weight
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0:
            vector[0] = 1.0
            return vector
        return [v / norm for v in vector]

    embedder = HashingEmbedder(384)
    for text in ("Alice prefers tea.", "benchmark memory 12 about topic 12 and detail 95", "", "!!!",
                 "a a a a b b b", "Über-naïve café talk " * 5):
        assert embedder.embed_one(text) == dense(text)
        assert vector_literal(embedder.embed_one(text)) == "[" + ",".join(f"{v:.9g}" for v in dense(text)) + "]"


def test_vector_literals_are_the_same_text_whether_the_vector_is_sparse_or_dense():
    """Two ways of formatting (zeros skipped for hashing vectors, one %-format for a model's dense
    ones): the text must be what formatting each value gives, since imports compare nothing else."""
    import random

    from banks.vectors import vector_literal

    rng = random.Random(4)
    vectors = [[rng.uniform(-1, 1) for _ in range(384)] for _ in range(50)]
    vectors += [[0.0] * 300 + [rng.uniform(-1, 1) for _ in range(84)], [0.0, 1e-9, -3.5, 2.0], [0.0], [1e30, -1e-30]]
    for vector in vectors:
        assert vector_literal(vector) == "[" + ",".join("0" if v == 0 else f"{v:.9g}" for v in vector) + "]"


def test_the_local_model_is_read_only_once_something_is_embedded() -> None:
    """An import whose archive carries every vector never embeds: it should not hold the model's 130 MB."""
    from banks.providers.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    assert not hasattr(embedder, "tokenizer") and not hasattr(embedder, "layers")
    assert embedder.embed([]) == [] and not hasattr(embedder, "layers")
    vector = embedder.embed_one("The heron waded at dawn.")
    assert len(vector) == 384 and len(embedder.layers) == 6
