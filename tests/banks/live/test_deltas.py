from __future__ import annotations

import pytest

from banks.live.deltas import DeltaSchemaError, apply_delta_ops
from banks.live.structured_doc import StructuredDocument


def doc() -> StructuredDocument:
    return StructuredDocument.model_validate({"sections": [
        {"id": "tools", "heading": "Tools", "blocks": [{"type": "paragraph", "text": "Python; VS Code"}]},
        {"id": "people", "heading": "People", "blocks": []},
    ]})


P = {"type": "paragraph", "text": "new"}


def texts(d, sid):
    return [getattr(b, "text", None) or getattr(b, "items", None) for b in d.section(sid).blocks]


class TestEachOp:
    def test_append_block(self):
        r = apply_delta_ops(doc(), [{"op": "append_block", "section_id": "tools", "block": P}])
        assert texts(r.doc, "tools") == ["Python; VS Code", "new"]
        assert r.applied == [{"op": "append_block", "section_id": "tools"}] and r.changed

    def test_insert_block_at_start_and_at_end(self):
        r = apply_delta_ops(doc(), [{"op": "insert_block", "section_id": "tools", "index": 0, "block": P},
                                    {"op": "insert_block", "section_id": "tools", "index": 2, "block": P}])
        assert texts(r.doc, "tools") == ["new", "Python; VS Code", "new"]

    def test_replace_block(self):
        r = apply_delta_ops(doc(), [{"op": "replace_block", "section_id": "tools", "index": 0, "block": P}])
        assert texts(r.doc, "tools") == ["new"]
        assert r.applied == [{"op": "replace_block", "section_id": "tools", "index": 0}]

    def test_remove_block(self):
        r = apply_delta_ops(doc(), [{"op": "remove_block", "section_id": "tools", "index": 0}])
        assert texts(r.doc, "tools") == []

    def test_add_section_appends_or_goes_after_an_anchor_with_a_unique_id(self):
        r = apply_delta_ops(doc(), [
            {"op": "add_section", "heading": "Tools", "blocks": [P]},
            {"op": "add_section", "heading": "Goals", "level": 3, "after_section_id": "tools", "new_id": "g"},
        ])
        assert [s.id for s in r.doc.sections] == ["tools", "g", "people", "tools-2"]
        assert r.applied[0] == {"op": "add_section", "heading": "Tools", "level": 2, "assigned_id": "tools-2"}
        assert r.applied[1]["assigned_id"] == "g" and r.doc.section("g").level == 3

    def test_remove_section(self):
        r = apply_delta_ops(doc(), [{"op": "remove_section", "section_id": "people"}])
        assert [s.id for s in r.doc.sections] == ["tools"]

    def test_replace_section_blocks(self):
        r = apply_delta_ops(doc(), [{"op": "replace_section_blocks", "section_id": "tools",
                                     "blocks": [P, {"type": "bullet_list", "items": ["a"]}]}])
        assert texts(r.doc, "tools") == ["new", ["a"]]
        assert r.applied == [{"op": "replace_section_blocks", "section_id": "tools"}]

    def test_rename_section_keeps_the_id(self):
        r = apply_delta_ops(doc(), [{"op": "rename_section", "section_id": "tools", "new_heading": "Toolbox"}])
        assert r.doc.section("tools").heading == "Toolbox"


@pytest.mark.parametrize(
    ("op", "reason"),
    [
        ({"op": "append_block", "section_id": "nope", "block": P}, "unknown section_id: nope"),
        ({"op": "insert_block", "section_id": "tools", "index": 2, "block": P}, "index out of range: 2 > 1"),
        ({"op": "replace_block", "section_id": "tools", "index": 5, "block": P}, "index out of range: 5 >= 1"),
        ({"op": "remove_block", "section_id": "people", "index": 0}, "index out of range: 0 >= 0"),
        ({"op": "add_section", "heading": "X", "after_section_id": "nope"}, "unknown after_section_id: nope"),
        ({"op": "remove_section", "section_id": "nope"}, "unknown section_id: nope"),
        ({"op": "replace_section_blocks", "section_id": "nope"}, "unknown section_id: nope"),
        ({"op": "rename_section", "section_id": "nope", "new_heading": "x"}, "unknown section_id: nope"),
    ],
)
def test_every_skip_reason(op, reason):
    r = apply_delta_ops(doc(), [op])
    assert r.applied == [] and not r.changed
    assert r.skipped[0]["reason"] == reason
    assert "block" not in r.skipped[0] and "blocks" not in r.skipped[0]


def test_skips_do_not_stop_later_ops_and_order_matters():
    r = apply_delta_ops(doc(), [
        {"op": "replace_block", "section_id": "tools", "index": 0, "block": P},
        {"op": "remove_block", "section_id": "tools", "index": 5},
        {"op": "add_section", "heading": "Later", "new_id": "later"},
        {"op": "append_block", "section_id": "later", "block": P},
    ])
    assert len(r.applied) == 3 and len(r.skipped) == 1
    assert r.skipped[0]["reason"] == "index out of range: 5 >= 1"
    assert texts(r.doc, "later") == ["new"]
    assert r.applied_ops is r.applied and r.skipped_ops is r.skipped


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ([{"op": "explode", "section_id": "tools"}], "operations[0]"),
        ([{"op": "remove_block", "section_id": "tools"}], "operations[0].index: Field required"),
        ([{"op": "remove_block", "section_id": "tools", "index": 0, "extra": 1}], "operations[0].extra"),
        ([{"op": "append_block", "section_id": "tools", "block": {"type": "table"}}], "operations[0].block"),
        ([{"op": "remove_block", "section_id": "tools", "index": -1}], "operations[0].index"),
        ([P, "not an object"], "operations[0]"),
        ("not a list", "operations: must be a list"),
    ],
)
def test_one_bad_op_rejects_the_whole_list(ops, message):
    with pytest.raises(DeltaSchemaError) as caught:
        apply_delta_ops(doc(), ops)
    assert message in str(caught.value)


def test_a_valid_op_before_a_bad_one_is_not_applied():
    original = doc()
    with pytest.raises(DeltaSchemaError):
        apply_delta_ops(original, [{"op": "remove_section", "section_id": "tools"}, {"op": "nope"}])
    assert [s.id for s in original.sections] == ["tools", "people"]


def test_the_documented_alias_shape_is_accepted():
    r = apply_delta_ops(doc(), [{"op": "replace_block", "section_id": "tools", "block_index": 0,
                                 "new_content": "Python for data work; Cursor IDE."}])
    assert texts(r.doc, "tools") == ["Python for data work; Cursor IDE."]
    assert r.applied == [{"op": "replace_block", "section_id": "tools", "index": 0}]


def test_the_input_document_is_never_mutated():
    original = doc()
    apply_delta_ops(original, [{"op": "remove_section", "section_id": "tools"}])
    assert [s.id for s in original.sections] == ["tools", "people"]
