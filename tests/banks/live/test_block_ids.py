"""Stable block ids (pure rules): derived for old documents, kept through edits, addressable by ops."""

from __future__ import annotations

import pytest

from banks.live.deltas import DeltaSchemaError, StaleBlockError, apply_delta_ops
from banks.live.structured_doc import (
    StructuredDocError,
    StructuredDocument,
    carry_block_ids,
    ensure_block_ids,
    load_document,
    parse_markdown,
)

P = {"type": "paragraph", "text": "new"}
STORED = {"sections": [
    {"id": "tools", "heading": "Tools", "blocks": [{"type": "paragraph", "text": "Python"},
                                                    {"type": "paragraph", "text": "VS Code"},
                                                    {"type": "bullet_list", "items": ["async"]}]},
    {"id": "people", "heading": "People", "blocks": [{"type": "paragraph", "text": "Alice"}]},
]}


def stored() -> StructuredDocument:
    return load_document(STORED)


def block_ids(doc: StructuredDocument, section_id: str) -> list[str]:
    section = doc.section(section_id)
    assert section is not None
    return [b.id or "" for b in section.blocks]


def texts(doc: StructuredDocument, section_id: str) -> list[str]:
    section = doc.section(section_id)
    assert section is not None
    return [getattr(b, "text", None) or ",".join(getattr(b, "items", [])) for b in section.blocks]


class TestIds:
    def test_a_document_stored_without_ids_reads_with_the_same_unique_ids_every_time(self):
        first, second = stored(), stored()
        ids = block_ids(first, "tools") + block_ids(first, "people")
        assert len(set(ids)) == 4 and all(i.startswith("b") for i in ids)
        assert ids == block_ids(second, "tools") + block_ids(second, "people")

    def test_fresh_ids_for_new_documents_are_unique(self):
        doc = ensure_block_ids(parse_markdown("## A\n\none\n\ntwo\n\n## B\n\nthree\n"))
        ids = block_ids(doc, "a") + block_ids(doc, "b")
        assert len(set(ids)) == 3

    def test_a_repeated_id_is_given_to_its_first_holder_only(self):
        doc = StructuredDocument.model_validate({"sections": [
            {"id": "a", "heading": "A", "blocks": [{"id": "b1", **P}, {"id": "b1", **P}]}]})
        ensure_block_ids(doc)
        assert block_ids(doc, "a")[0] == "b1" and block_ids(doc, "a")[1] != "b1"

    def test_a_submitted_document_may_not_repeat_an_id(self):
        doc = {"sections": [{"id": "a", "heading": "A", "blocks": [{"id": "x1", **P}, {"id": "x1", **P}]}]}
        with pytest.raises(StructuredDocError, match=r"sections\[0\]\.blocks\[1\]\.id: duplicate block id 'x1'"):
            load_document(doc, submitted=True)

    def test_a_malformed_id_is_refused(self):
        with pytest.raises(StructuredDocError, match=r"blocks\[0\]\.id"):
            load_document({"sections": [{"id": "a", "heading": "A", "blocks": [{"id": "no spaces", **P}]}]})

    def test_astrocyte_dump_has_no_ids(self):
        dumped = stored().astrocyte_dump()
        assert dumped["sections"][0]["blocks"][0] == {"type": "paragraph", "text": "Python"}

    def test_a_rewrite_keeps_the_ids_of_unchanged_blocks(self):
        old = stored()
        new = carry_block_ids(old, parse_markdown("## Tools\n\nPython\n\nCursor\n\n- async\n\n## People\n\nAlice\n"))
        old_ids, new_ids = block_ids(old, "tools"), block_ids(new, "tools")
        assert new_ids[0] == old_ids[0] and new_ids[2] == old_ids[2]
        assert new_ids[1] not in old_ids
        assert block_ids(new, "people") == block_ids(old, "people")

    def test_a_block_that_moves_to_another_section_gets_a_new_id(self):
        old = stored()
        new = carry_block_ids(old, parse_markdown("## People\n\nPython\n"))
        assert block_ids(new, "people")[0] not in block_ids(old, "tools")


class TestOpsByBlockId:
    def test_replace_by_block_id_keeps_the_id_after_other_edits_moved_it(self):
        doc = stored()
        target = block_ids(doc, "tools")[1]
        r = apply_delta_ops(doc, [
            {"op": "insert_block", "section_id": "tools", "index": 0, "block": P},
            {"op": "replace_block", "block_id": target, "block": {"type": "paragraph", "text": "Cursor"}},
        ])
        assert texts(r.doc, "tools") == ["new", "Python", "Cursor", "async"]
        assert block_ids(r.doc, "tools")[2] == target
        assert r.applied[1] == {"op": "replace_block", "block_id": target, "section_id": "tools"}

    def test_replace_by_index_keeps_the_id_too(self):
        doc = stored()
        r = apply_delta_ops(doc, [{"op": "replace_block", "section_id": "tools", "index": 0, "block": P}])
        assert block_ids(r.doc, "tools") == block_ids(doc, "tools")

    def test_insert_before_a_block_and_append_get_fresh_ids(self):
        doc = stored()
        before = block_ids(doc, "tools")
        r = apply_delta_ops(doc, [{"op": "insert_block", "block_id": before[2], "block": P},
                                  {"op": "append_block", "section_id": "people", "block": P}])
        after = block_ids(r.doc, "tools")
        assert texts(r.doc, "tools") == ["Python", "VS Code", "new", "async"]
        assert after[:2] == before[:2] and after[3] == before[2] and after[2] not in before
        assert len(set(after + block_ids(r.doc, "people"))) == 6

    def test_remove_by_block_id(self):
        doc = stored()
        first = block_ids(doc, "tools")[0]
        r = apply_delta_ops(doc, [{"op": "remove_block", "section_id": "tools", "block_id": first}])
        assert texts(r.doc, "tools") == ["VS Code", "async"] and first not in block_ids(r.doc, "tools")

    def test_a_supplied_id_that_is_taken_is_replaced(self):
        doc = stored()
        taken = block_ids(doc, "people")[0]
        r = apply_delta_ops(doc, [{"op": "append_block", "section_id": "tools", "block": {"id": taken, **P}}])
        assert block_ids(r.doc, "tools")[-1] != taken and block_ids(r.doc, "people") == [taken]

    def test_replace_section_blocks_may_reorder_the_sections_own_ids(self):
        doc = stored()
        ids = block_ids(doc, "tools")
        r = apply_delta_ops(doc, [{"op": "replace_section_blocks", "section_id": "tools", "blocks": [
            {"id": ids[1], "type": "paragraph", "text": "VS Code"}, {"id": ids[0], "type": "paragraph", "text": "Py"},
            {"id": block_ids(doc, "people")[0], **P}]}])
        after = block_ids(r.doc, "tools")
        assert after[:2] == [ids[1], ids[0]] and after[2] not in block_ids(doc, "people")

    @pytest.mark.parametrize(("op", "message"), [
        ({"op": "remove_block", "block_id": "bdeadbeef00"}, "operations[0].block_id: unknown block 'bdeadbeef00'"),
        ({"op": "replace_block", "section_id": "people", "block_id": "FIRST", "block": P},
         "operations[0].block_id: block 'FIRST' is in section 'tools', not 'people'"),
        ({"op": "remove_block", "section_id": "tools", "index": 2, "block_id": "FIRST"},
         "operations[0].block_id: block 'FIRST' is at index 0, not 2"),
    ])
    def test_a_stale_block_id_is_refused_naming_it(self, op, message):
        doc = stored()
        first = block_ids(doc, "tools")[0]
        op = {k: (first if v == "FIRST" else v) for k, v in op.items()}
        with pytest.raises(StaleBlockError) as caught:
            apply_delta_ops(doc, [op])
        assert str(caught.value).startswith(message.replace("FIRST", first))
        assert caught.value.block_id == op["block_id"] and caught.value.position == 0
        assert doc == stored()

    def test_a_block_removed_by_an_earlier_op_is_stale_for_a_later_one(self):
        doc = stored()
        first = block_ids(doc, "tools")[0]
        with pytest.raises(StaleBlockError) as caught:
            apply_delta_ops(doc, [{"op": "remove_block", "block_id": first},
                                  {"op": "replace_block", "block_id": first, "block": P}])
        assert caught.value.position == 1

    @pytest.mark.parametrize(("op", "message"), [
        ({"op": "remove_block", "section_id": "tools"}, "operations[0].index: Field required"),
        ({"op": "remove_block", "index": 0}, "operations[0].section_id: Field required"),
        ({"op": "remove_block", "block_id": "not valid!"}, "operations[0].block_id: String should match"),
        ({"op": "append_block", "block_id": "b1", "section_id": "tools", "block": P},
         "operations[0].block_id: Extra inputs are not permitted"),
    ])
    def test_schema_errors_name_the_field(self, op, message):
        with pytest.raises(DeltaSchemaError) as caught:
            apply_delta_ops(stored(), [op])
        assert any(m.startswith(message) for m in caught.value.messages), caught.value.messages
