"""An AMA line's vector is kept as the text it arrived in when it is a plain array of numbers that
PostgreSQL stores as it is; any other shape, or any doubt about which array is the line's own, is
parsed and checked as before."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from banks.models import Memory
from banks.providers import get_embedder
from portability.formats.ama import parse_line
from portability.formats.registry import open_archive
from portability.records import MemoryRecord, RecordError, record_problem
from portability.services import archive_import
from portability.vector_text import PLACEHOLDER, VectorText, cut_vector

MAX = 10 * 1024 * 1024


@pytest.mark.parametrize(("array", "kept"), [
    ("[0.5, -0.25, 0]", True),
    ("[ 0.5 ,-0.25,0.0 ]", True),
    ("[3.2e-05, -1E-7, 0.1]", True),  # how floats under 1e-4 are written
    ("[" + "9" * 38 + ".5]", True),  # 38 integer digits: below single precision's limit
    ("[" + "9" * 39 + "]", False),  # 39 may not be
    ("[1e+39, 0.5]", False),  # a positive exponent may exceed it
    ("[1e5]", False),
    ("[NaN, 0.5]", False),
    ("[Infinity]", False),
    ("[01, 2]", False),  # not JSON
    ("[.5]", False),
    ("[1.]", False),
    ("[]", False),
    ('["0.5"]', False),
    ("[[0.5]]", False),
])
def test_which_arrays_are_kept_as_text(array: str, kept: bool) -> None:
    cut = cut_vector('{"id": "a", "text": "x", "embedding": ' + array + ', "embedding_model": "m"}')
    assert (cut is not None) is kept
    if cut is not None:
        rest, vector = cut
        assert json.loads(rest)["embedding"] == PLACEHOLDER
        assert vector.text == array and list(vector) == [float(x) for x in json.loads(array)]
        assert len(vector) == len(json.loads(array))


def record(line: dict | str) -> MemoryRecord | RecordError | None:
    return parse_line(line if isinstance(line, str) else json.dumps(line), 2, MAX)


def test_a_plain_vector_is_read_as_text_and_equals_its_floats() -> None:
    item = record({"id": "a", "text": "x", "embedding": [0.5, -0.25, 3.2e-05], "embedding_model": "m"})
    assert isinstance(item, MemoryRecord) and isinstance(item.embedding, VectorText)
    assert item.embedding == [0.5, -0.25, 3.2e-05] and record_problem(item) is None


def test_an_embedding_array_inside_metadata_is_never_taken_for_the_lines_own() -> None:
    only_nested = record({"id": "a", "text": "x", "metadata": {"embedding": [0.5, 0.25]}})
    assert isinstance(only_nested, MemoryRecord) and only_nested.embedding is None
    assert only_nested.metadata == {"embedding": [0.5, 0.25]}
    both = record({"id": "b", "text": "x", "metadata": {"embedding": [9.0]}, "embedding": [0.5, 0.25]})
    assert isinstance(both, MemoryRecord) and both.embedding == [0.5, 0.25] and both.metadata == {"embedding": [9.0]}
    after = record('{"id": "c", "text": "x", "embedding": [0.5, 0.25], "metadata": {"embedding": [9.0]}}')
    assert isinstance(after, MemoryRecord) and after.embedding == [0.5, 0.25] and after.metadata == {"embedding": [9.0]}


def test_text_that_looks_like_a_vector_or_holds_the_placeholder_is_only_text() -> None:
    looks = record({"id": "a", "text": 'he typed "embedding": [1, 2]', "embedding": [0.5]})
    assert isinstance(looks, MemoryRecord) and looks.text == 'he typed "embedding": [1, 2]' and looks.embedding == [0.5]
    # Its own "embedding" is the placeholder's text, not an array: the line is bad, whatever its metadata holds.
    sneaky = record({"id": "b", "text": "x", "embedding": PLACEHOLDER, "metadata": {"embedding": [0.5]}})
    assert isinstance(sneaky, RecordError) and sneaky.reason == "field 'embedding' must be a list of numbers"


def test_a_vector_past_single_precision_still_fails_its_own_line() -> None:
    item = record({"id": "a", "text": "x", "embedding": [1e39, 0.5]})
    assert isinstance(item, MemoryRecord) and not isinstance(item.embedding, VectorText)
    assert "single precision" in (record_problem(item) or "")
    bad = record('{"id": "a", "text": "x", "embedding": [0.5, "a"]}')
    assert isinstance(bad, RecordError) and "embedding" in bad.reason


@pytest.mark.django_db
def test_vectors_read_as_text_are_stored_to_the_last_bit(make_bank, tmp_path: Path) -> None:
    """Single-precision values written as a double's shortest text (as an export writes them) come back
    exactly; formatting them again with seven digits would have moved some by a unit in the last place."""
    embedder = get_embedder()
    rng = random.Random(7)
    vectors = [[float(np.float32(rng.gauss(0, 0.05))) for _ in range(embedder.dimensions)] for _ in range(20)]
    path = tmp_path / "v.ama.jsonl"
    lines = [{"_ama_version": 1, "bank_id": "x", "memory_count": 20}] + [
        {"id": f"m{i}", "text": f"memory {i}", "embedding": v, "embedding_model": embedder.name}
        for i, v in enumerate(vectors)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    bank = make_bank("exact")
    _, header, records = open_archive(path)
    report = archive_import(bank=bank, records=records, actor="test", extract_entities=False)
    assert report.imported == 20
    for i, vector in enumerate(vectors):
        stored = Memory.objects.get(bank=bank, memory_id=f"m{i}")
        assert [np.float32(x) for x in stored.embedding] == [np.float32(x) for x in vector]
        assert stored.embedding_dims == embedder.dimensions and stored.embedding_model == embedder.name


def test_vectors_formatted_for_the_database_keep_every_single_precision_bit() -> None:
    from banks.vectors import vector_literal

    rng = random.Random(11)
    dense = [float(np.float32(rng.gauss(0, 0.05))) for _ in range(384)]
    sparse = [0.0] * 300 + dense[:84]
    for vector in (dense, sparse):
        back = [np.float32(x) for x in json.loads(vector_literal(vector))]
        assert back == [np.float32(x) for x in vector]
