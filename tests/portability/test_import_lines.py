"""The line rules an import applies, without a database: the strict pre-pass and the writer ask the same
function, so what one refuses the other does."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from portability.import_lines import ImportReport, id_key, line_problem, strict_check
from portability.records import MemoryRecord, RecordError, RecordSkipped


def _record(position: int, text: str = "a fact", **kwargs) -> MemoryRecord:  # noqa: ANN003
    return MemoryRecord(text=text, position=position, **kwargs)


def test_a_good_line_passes_and_its_id_is_remembered():
    seen: dict[int, object] = {}
    assert line_problem(_record(1, memory_id="m-1"), seen) is None
    assert seen == {id_key("m-1"): 1}
    assert line_problem(_record(2, memory_id="m-2"), seen) is None


def test_a_repeated_id_names_the_line_it_repeats():
    seen: dict[int, object] = {}
    line_problem(_record(3, memory_id="m-1"), seen)
    assert line_problem(_record(9, text="another", memory_id="m-1"), seen) == "memory_id 'm-1' repeats line 3"


def test_unreadable_and_empty_lines_are_refused_with_their_reason():
    assert line_problem(RecordError(position=4, reason="not JSON"), {}) == "not JSON"
    assert line_problem(_record(5, text="  \n"), {}) == "empty text"
    assert line_problem(_record(6, text="bad\x00text"), {}) is not None
    assert line_problem(_record(7, metadata={"x": math.nan}), {}) is not None


def test_created_at_comes_from_astrocytes_metadata_when_the_line_has_none():
    record = _record(1, metadata={"_created_at": "2020-05-06T07:08:09Z"})
    assert line_problem(record, {}) is None
    assert record.created_at == datetime(2020, 5, 6, 7, 8, 9, tzinfo=UTC)


def test_the_strict_pre_pass_counts_every_line_and_notes_each_bad_one():
    items = [_record(1, memory_id="a"), RecordSkipped(position=2, reason="a conversation marked private"),
             _record(3, text=""), _record(4, memory_id="a"), RecordError(position=5, reason="not JSON")]
    check = strict_check(items)
    assert (check.lines, check.invalid) == (5, 3)
    assert [e["line"] for e in check.errors] == [3, 4, 5]


def test_the_report_keeps_at_most_a_thousand_errors():
    report = ImportReport()
    for i in range(1500):
        report.note(i, "bad")
    assert len(report.errors) == 1000
