"""Delta operations refused as a whole when one is malformed (all or nothing, every message naming its
operation), and the seed's alias shape of the operations."""

from __future__ import annotations

import copy

import pytest

from banks.live.deltas import OP_NAMES, DeltaSchemaError, apply_delta_ops, validate_ops
from tests.banks.live.delta_docs import P, apply, contents, doc


class TestSchemaRejection:
    @pytest.mark.parametrize(
        ("ops", "message"),
        [
            ([{"op": "explode", "section_id": "tools"}], "operations[0].op: Input tag 'explode'"),
            ([{"section_id": "tools"}], "operations[0].op: Field required"),
            ([{"op": "remove_block", "section_id": "tools"}], "operations[0].index: Field required"),
            ([{"op": "append_block", "block": P}], "operations[0].section_id: Field required"),
            ([{"op": "add_section"}], "operations[0].heading: Field required"),
            ([{"op": "rename_section", "section_id": "tools"}], "operations[0].new_heading: Field required"),
            ([{"op": "remove_block", "section_id": "tools", "index": 0, "extra": 1}],
             "operations[0].extra: Extra inputs are not permitted"),
            ([{"op": "append_block", "section_id": "tools", "block": {"type": "table"}}],
             "operations[0].block.type: Input tag 'table'"),
            ([{"op": "append_block", "section_id": "tools", "block": {"type": "paragraph"}}],
             "operations[0].block.text: Field required"),
            ([{"op": "append_block", "section_id": "tools", "block": {**P, "bold": True}}],
             "operations[0].block.bold: Extra inputs are not permitted"),
            ([{"op": "append_block", "section_id": "tools", "block": "text"}], "operations[0].block: "),
            ([{"op": "replace_section_blocks", "section_id": "tools", "blocks": [P, {"type": "code"}]}],
             "operations[0].blocks[1].text: Field required"),
            ([{"op": "remove_block", "section_id": "tools", "index": -1}],
             "operations[0].index: Input should be greater than or equal to 0"),
            ([{"op": "insert_block", "section_id": "tools", "index": "x", "block": P}], "operations[0].index: "),
            ([{"op": "add_section", "heading": "X", "level": 7}], "operations[0].level: "),
            ([{"op": "add_section", "heading": "X", "section_id": "tools"}],
             "operations[0].section_id: Extra inputs are not permitted"),
            ([P, "not an object"], "operations[0].op: Field required"),
            ([{"op": "remove_section", "section_id": "tools"}, "not an object"], "operations[1]: "),
            ("not a list", "operations: must be a list"),
            ({"op": "remove_section", "section_id": "tools"}, "operations: must be a list"),
        ],
    )
    def test_one_bad_op_rejects_the_whole_list(self, ops, message):
        with pytest.raises(DeltaSchemaError) as caught:
            apply_delta_ops(doc(), ops)
        assert any(m.startswith(message) for m in caught.value.messages), caught.value.messages

    def test_every_bad_op_is_reported_with_its_position(self):
        with pytest.raises(DeltaSchemaError) as caught:
            apply({"op": "remove_section", "section_id": "tools"}, {"op": "remove_block", "section_id": "x"},
                  {"op": "rename_section", "section_id": "tools", "new_heading": "ok"}, {"op": "nope"})
        assert [m.split(":")[0] for m in caught.value.messages] == ["operations[1].index", "operations[3].op"]
        assert str(caught.value) == "; ".join(caught.value.messages)
        assert isinstance(caught.value, ValueError)

    def test_valid_ops_before_a_bad_one_are_not_applied(self):
        original = doc()
        with pytest.raises(DeltaSchemaError):
            apply_delta_ops(original, [{"op": "remove_section", "section_id": "tools"}, {"op": "nope"}])
        assert original == doc()

    def test_an_empty_list_is_valid_and_changes_nothing(self):
        r = apply()
        assert (r.applied, r.skipped, r.changed, r.doc.astrocyte_dump()) == ([], [], False, doc().astrocyte_dump())

    def test_validate_ops_returns_models(self):
        parsed = validate_ops([{"op": name, **fields} for name, fields in [
            ("append_block", {"section_id": "a", "block": P}),
            ("add_section", {"heading": "h"}),
        ]])
        assert [p.op for p in parsed] == ["append_block", "add_section"]
        assert set(OP_NAMES) == {"append_block", "insert_block", "replace_block", "remove_block", "add_section",
                                 "remove_section", "replace_section_blocks", "rename_section"}


class TestSeedAliasShape:
    """The published docs' {"block_index", "new_content"} spelling, translated before validation."""

    def test_documented_example(self):
        r = apply({"op": "replace_block", "section_id": "tools", "block_index": 0,
                   "new_content": "Python for data work; Cursor IDE."})
        assert contents(r.doc, "tools") == ["Python for data work; Cursor IDE."]
        assert r.applied == [{"op": "replace_block", "section_id": "tools", "index": 0}]
        assert r.applied_ops == r.applied and r.skipped_ops == []

    def test_insert_append_and_remove(self):
        r = apply({"op": "insert_block", "section_id": "tools", "block_index": 0, "new_content": "first"},
                  {"op": "append_block", "section_id": "tools", "new_content": "last"},
                  {"op": "remove_block", "section_id": "tools", "block_index": 1})
        assert contents(r.doc, "tools") == ["first", "last"]

    def test_list_and_code_chunks_keep_their_structure(self):
        r = apply({"op": "append_block", "section_id": "people", "new_content": "- Alice\n- Bob"},
                  {"op": "append_block", "section_id": "people", "new_content": "1. one\n2) two\n"},
                  {"op": "append_block", "section_id": "people", "new_content": "```sql\nselect 1\n```"})
        assert [b.model_dump(exclude={"id"}) for b in r.doc.section("people").blocks] == [
            {"type": "bullet_list", "items": ["Alice", "Bob"]},
            {"type": "ordered_list", "items": ["one", "two"]},
            {"type": "code", "language": "sql", "text": "select 1"},
        ]

    def test_other_text_is_one_paragraph_kept_verbatim(self):
        text = "Line one\nline two\n\n- not a list on its own"
        r = apply({"op": "append_block", "section_id": "people", "new_content": f"  {text}\n"})
        assert [b.model_dump(exclude={"id"}) for b in r.doc.section("people").blocks] == [{"type": "paragraph", "text": text}]

    def test_skip_reasons_use_the_real_field_names(self):
        r = apply({"op": "replace_block", "section_id": "tools", "block_index": 3, "new_content": "x"})
        assert r.skipped == [{"op": "replace_block", "section_id": "tools", "index": 3,
                              "reason": "index out of range: 3 >= 1"}]

    @pytest.mark.parametrize(("op", "message"), [
        ({"op": "replace_block", "section_id": "tools", "block_index": 0, "new_content": 5},
         "operations[0].new_content: Input should be a valid string"),
        ({"op": "replace_block", "section_id": "tools", "index": 0, "block_index": 0, "block": P},
         "operations[0].block_index: Extra inputs are not permitted"),
        ({"op": "replace_block", "section_id": "tools", "index": 0, "new_content": "x", "block": P},
         "operations[0].new_content: Extra inputs are not permitted"),
        ({"op": "append_block", "section_id": "tools", "block_index": 0, "new_content": "x"},
         "operations[0].block_index: Extra inputs are not permitted"),
        ({"op": "remove_block", "section_id": "tools", "index": 0, "new_content": "x"},
         "operations[0].new_content: Extra inputs are not permitted"),
        ({"op": "replace_block", "section_id": "tools", "block_index": -1, "new_content": "x"},
         "operations[0].index: Input should be greater than or equal to 0"),
    ])
    def test_ambiguous_or_misplaced_aliases_are_schema_errors(self, op, message):
        with pytest.raises(DeltaSchemaError) as caught:
            apply(op)
        assert message in caught.value.messages

    def test_caller_ops_are_not_modified(self):
        ops = [{"op": "replace_block", "section_id": "tools", "block_index": 0, "new_content": "x"}]
        before = copy.deepcopy(ops)
        apply_delta_ops(doc(), ops)
        assert ops == before


@pytest.mark.parametrize("op_name", [{"replace_block": 1}, ["remove_block"], -2.5e176, None, True])
def test_an_op_name_that_is_not_a_string_is_a_schema_error(op_name):
    with pytest.raises(DeltaSchemaError) as caught:
        validate_ops([{"op": op_name, "block_index": 0, "section_id": "s", "new_content": "x"}])
    assert any(message.startswith("operations[0]") for message in caught.value.messages)
