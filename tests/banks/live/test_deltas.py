"""Delta operations: each op, each skip reason, ordering, isolation, the result, and random op lists
against the astrocyte library. The schema checks and the seed's alias shape are test_delta_schema.py."""

from __future__ import annotations

import copy
import importlib
import random

import pytest

from banks.live.deltas import OP_NAMES, apply_delta_ops
from banks.live.structured_doc import StructuredDocument
from tests.banks.live.delta_docs import BASE, P, apply, contents, doc, ids


class TestEachOp:
    def test_append_block(self):
        r = apply({"op": "append_block", "section_id": "tools", "block": P})
        assert contents(r.doc, "tools") == ["Python; VS Code", "new"]
        assert r.applied == [{"op": "append_block", "section_id": "tools"}] and r.skipped == [] and r.changed

    def test_insert_block_at_start_and_at_len(self):
        r = apply({"op": "insert_block", "section_id": "tools", "index": 0, "block": P},
                  {"op": "insert_block", "section_id": "tools", "index": 2,
                   "block": {"type": "bullet_list", "items": ["end"]}})
        assert contents(r.doc, "tools") == ["new", "Python; VS Code", ["end"]]
        assert r.applied[0] == {"op": "insert_block", "section_id": "tools", "index": 0}

    def test_insert_into_an_empty_section(self):
        r = apply({"op": "insert_block", "section_id": "people", "index": 0, "block": P})
        assert contents(r.doc, "people") == ["new"]

    def test_replace_block(self):
        code = {"type": "code", "language": "sh", "text": "ls"}
        r = apply({"op": "replace_block", "section_id": "tools", "index": 0, "block": code})
        assert r.doc.section("tools").blocks[0].model_dump(exclude={"id"}) == code
        assert r.applied == [{"op": "replace_block", "section_id": "tools", "index": 0}]

    def test_remove_block(self):
        r = apply({"op": "remove_block", "section_id": "tools", "index": 0})
        assert contents(r.doc, "tools") == []
        assert r.applied == [{"op": "remove_block", "section_id": "tools", "index": 0}]

    def test_add_section_appends_by_default(self):
        r = apply({"op": "add_section", "heading": "Goals", "blocks": [P]})
        assert ids(r.doc) == ["tools", "people", "goals"]
        added = r.doc.section("goals")
        assert (added.heading, added.level, contents(r.doc, "goals")) == ("Goals", 2, ["new"])
        # Astrocyte's summary names after_section_id and new_id even when they were not given.
        assert r.applied == [{"op": "add_section", "heading": "Goals", "level": 2, "after_section_id": None,
                              "new_id": None, "assigned_id": "goals"}]

    def test_add_section_after_a_section(self):
        r = apply({"op": "add_section", "heading": "Goals", "level": 3, "after_section_id": "tools"})
        assert ids(r.doc) == ["tools", "goals", "people"] and r.doc.section("goals").level == 3
        assert r.applied == [{"op": "add_section", "heading": "Goals", "level": 3, "after_section_id": "tools",
                              "new_id": None, "assigned_id": "goals"}]

    def test_add_section_after_the_last_section(self):
        r = apply({"op": "add_section", "heading": "Goals", "after_section_id": "people"})
        assert ids(r.doc) == ["tools", "people", "goals"]

    def test_add_section_into_an_empty_document(self):
        r = apply_delta_ops(StructuredDocument(), [{"op": "add_section", "heading": "First"}])
        assert ids(r.doc) == ["first"]

    def test_remove_section(self):
        r = apply({"op": "remove_section", "section_id": "tools"})
        assert ids(r.doc) == ["people"]
        assert r.applied == [{"op": "remove_section", "section_id": "tools"}]

    def test_replace_section_blocks(self):
        r = apply({"op": "replace_section_blocks", "section_id": "tools",
                   "blocks": [P, {"type": "ordered_list", "items": ["a"]}]})
        assert contents(r.doc, "tools") == ["new", ["a"]]
        assert r.doc.section("tools").heading == "Tools"
        assert r.applied == [{"op": "replace_section_blocks", "section_id": "tools"}]

    def test_replace_section_blocks_defaults_to_clearing(self):
        r = apply({"op": "replace_section_blocks", "section_id": "tools"})
        assert contents(r.doc, "tools") == [] and r.changed

    def test_rename_section_keeps_id_level_and_blocks(self):
        r = apply({"op": "rename_section", "section_id": "tools", "new_heading": "Toolbox"})
        section = r.doc.section("tools")
        assert (section.heading, section.level, contents(r.doc, "tools")) == ("Toolbox", 2, ["Python; VS Code"])
        assert r.applied == [{"op": "rename_section", "section_id": "tools", "new_heading": "Toolbox"}]


class TestAddSectionIds:
    def test_slug_of_the_heading_made_unique(self):
        r = apply({"op": "add_section", "heading": "Tools"}, {"op": "add_section", "heading": "tools!"})
        assert ids(r.doc) == ["tools", "people", "tools-2", "tools-3"]
        assert [e["assigned_id"] for e in r.applied] == ["tools-2", "tools-3"]

    def test_new_id_is_used_and_made_unique(self):
        r = apply({"op": "add_section", "heading": "X", "new_id": "custom"},
                  {"op": "add_section", "heading": "Y", "new_id": "people"})
        assert [e["assigned_id"] for e in r.applied] == ["custom", "people-2"]
        assert r.applied[0]["new_id"] == "custom"

    def test_empty_new_id_falls_back_to_the_slug_and_empty_heading_to_section(self):
        r = apply({"op": "add_section", "heading": "Goals", "new_id": ""}, {"op": "add_section", "heading": ""})
        assert [e["assigned_id"] for e in r.applied] == ["goals", "section"]

    def test_a_removed_id_can_be_assigned_again(self):
        r = apply({"op": "remove_section", "section_id": "tools"}, {"op": "add_section", "heading": "Tools"})
        assert r.applied[1]["assigned_id"] == "tools"


BAD_SECTION = "unknown section_id: nope"


@pytest.mark.parametrize(
    ("op", "reason"),
    [
        ({"op": "append_block", "section_id": "nope", "block": P}, BAD_SECTION),
        ({"op": "insert_block", "section_id": "nope", "index": 0, "block": P}, BAD_SECTION),
        ({"op": "insert_block", "section_id": "tools", "index": 2, "block": P}, "index out of range: 2 > 1"),
        ({"op": "insert_block", "section_id": "people", "index": 1, "block": P}, "index out of range: 1 > 0"),
        ({"op": "replace_block", "section_id": "nope", "index": 0, "block": P}, BAD_SECTION),
        ({"op": "replace_block", "section_id": "tools", "index": 1, "block": P}, "index out of range: 1 >= 1"),
        ({"op": "replace_block", "section_id": "tools", "index": 5, "block": P}, "index out of range: 5 >= 1"),
        ({"op": "remove_block", "section_id": "nope", "index": 0}, BAD_SECTION),
        ({"op": "remove_block", "section_id": "people", "index": 0}, "index out of range: 0 >= 0"),
        ({"op": "add_section", "heading": "X", "after_section_id": "nope"}, "unknown after_section_id: nope"),
        ({"op": "remove_section", "section_id": "nope"}, BAD_SECTION),
        ({"op": "replace_section_blocks", "section_id": "nope", "blocks": [P]}, BAD_SECTION),
        ({"op": "rename_section", "section_id": "nope", "new_heading": "x"}, BAD_SECTION),
    ],
)
def test_every_skip_reason(op, reason):
    r = apply(op)
    assert r.applied == [] and not r.changed and r.doc.astrocyte_dump() == doc().astrocyte_dump()
    assert r.skipped == [{**{k: v for k, v in op.items() if k not in ("block", "blocks")},
                          **({"level": 2, "new_id": None} if op["op"] == "add_section" else {}), "reason": reason}]


def test_section_ids_are_case_sensitive():
    assert apply({"op": "remove_section", "section_id": "Tools"}).skipped[0]["reason"] == "unknown section_id: Tools"


class TestOrdering:
    def test_later_ops_see_earlier_results(self):
        r = apply(
            {"op": "replace_block", "section_id": "tools", "index": 0, "block": P},
            {"op": "remove_block", "section_id": "tools", "index": 5},
            {"op": "add_section", "heading": "Later", "new_id": "later"},
            {"op": "append_block", "section_id": "later", "block": P},
        )
        assert len(r.applied) == 3 and len(r.skipped) == 1
        assert r.skipped[0]["reason"] == "index out of range: 5 >= 1"
        assert contents(r.doc, "later") == ["new"]

    def test_an_op_on_a_removed_section_is_skipped(self):
        r = apply({"op": "remove_section", "section_id": "tools"},
                  {"op": "append_block", "section_id": "tools", "block": P})
        assert r.skipped == [{"op": "append_block", "section_id": "tools", "reason": "unknown section_id: tools"}]

    def test_indexes_refer_to_the_current_state(self):
        r = apply({"op": "append_block", "section_id": "tools", "block": {"type": "paragraph", "text": "b"}},
                  {"op": "remove_block", "section_id": "tools", "index": 0},
                  {"op": "remove_block", "section_id": "tools", "index": 1},
                  {"op": "insert_block", "section_id": "tools", "index": 1, "block": P})
        assert contents(r.doc, "tools") == ["b", "new"]
        assert r.skipped[0]["reason"] == "index out of range: 1 >= 1"

    def test_renamed_sections_keep_their_id_for_later_ops(self):
        r = apply({"op": "rename_section", "section_id": "tools", "new_heading": "Kit"},
                  {"op": "add_section", "heading": "Tools"},
                  {"op": "add_section", "heading": "After", "after_section_id": "tools"})
        assert ids(r.doc) == ["tools", "after", "people", "tools-2"]

    def test_after_section_id_can_name_a_section_added_earlier(self):
        r = apply({"op": "add_section", "heading": "A", "after_section_id": "tools"},
                  {"op": "add_section", "heading": "B", "after_section_id": "a"})
        assert ids(r.doc) == ["tools", "a", "b", "people"]

    def test_changed_is_true_when_any_op_applied(self):
        r = apply({"op": "remove_section", "section_id": "nope"}, {"op": "remove_section", "section_id": "people"})
        assert r.changed and len(r.skipped) == 1


class TestIsolation:
    def test_the_input_document_is_never_mutated(self):
        original = doc()
        apply_delta_ops(original, [{"op": "remove_section", "section_id": "tools"},
                                    {"op": "rename_section", "section_id": "people", "new_heading": "Team"},
                                    {"op": "append_block", "section_id": "people", "block": P}])
        assert original == doc()

    def test_the_result_shares_no_blocks_with_the_input(self):
        original = doc()
        r = apply_delta_ops(original, [])
        r.doc.sections[0].blocks[0].text = "changed"
        assert original.sections[0].blocks[0].text == "Python; VS Code"

    def test_op_dicts_are_not_modified(self):
        ops = [{"op": "add_section", "heading": "X", "blocks": [P]},
               {"op": "append_block", "section_id": "x", "block": P}]
        before = copy.deepcopy(ops)
        r = apply_delta_ops(doc(), ops)
        r.doc.section("x").blocks[0].text = "changed"
        assert ops == before


class TestResult:
    def test_audit_entries_leave_out_blocks_and_unset_optionals(self):
        r = apply({"op": "append_block", "section_id": "tools", "block": P},
                  {"op": "replace_section_blocks", "section_id": "people", "blocks": [P]},
                  {"op": "add_section", "heading": "G", "blocks": [P], "new_id": "g", "after_section_id": "x"})
        assert r.applied == [{"op": "append_block", "section_id": "tools"},
                             {"op": "replace_section_blocks", "section_id": "people"}]
        assert r.skipped == [{"op": "add_section", "heading": "G", "level": 2, "after_section_id": "x",
                              "new_id": "g", "reason": "unknown after_section_id: x"}]

    def test_summary_and_seed_aliases(self):
        r = apply({"op": "remove_section", "section_id": "tools"}, {"op": "remove_section", "section_id": "x"})
        assert r.applied_ops is r.applied and r.skipped_ops is r.skipped
        assert r.summary() == {"applied": r.applied, "skipped": r.skipped, "changed": True,
                               "applied_ops": r.applied, "skipped_ops": r.skipped}


def _random_ops(rng: random.Random, n: int) -> list[dict]:
    sections = ["tools", "people", "goals", "nope", "section", "tools-2"]
    block = {"type": "paragraph", "text": "b"}
    ops = []
    for _ in range(n):
        name = rng.choice(OP_NAMES)
        sid, index = rng.choice(sections), rng.randint(0, 3)
        op: dict = {"op": name}
        if name == "add_section":
            op["heading"] = rng.choice(["Goals", "Tools", ""])
            if rng.random() < 0.5:
                op["after_section_id"] = rng.choice(sections)
            if rng.random() < 0.3:
                op["new_id"] = rng.choice(sections)
            if rng.random() < 0.3:
                op["level"] = rng.randint(1, 6)
        elif name == "rename_section":
            op.update(section_id=sid, new_heading="Renamed")
        else:
            op["section_id"] = sid
            if name in ("insert_block", "replace_block", "remove_block"):
                op["index"] = index
            if name in ("append_block", "insert_block", "replace_block"):
                op["block"] = block
            if name == "replace_section_blocks":
                op["blocks"] = [block] * rng.randint(0, 2)
        ops.append(op)
    return ops


def test_matches_the_astrocyte_library_on_random_op_lists():
    # astrocyte is a pinned test dependency: if these modules move, this must fail, not skip.
    astro_ops = importlib.import_module("astrocyte.pipeline.delta_ops")
    astro_doc = importlib.import_module("astrocyte.pipeline.structured_doc")
    rng = random.Random(5)
    for _ in range(400):
        ops = _random_ops(rng, rng.randint(1, 8))
        ours = apply_delta_ops(doc(), ops)
        parsed = astro_ops.DeltaOperationList.model_validate({"operations": ops}).operations
        theirs = astro_ops.apply_operations(astro_doc.StructuredDocument.model_validate(BASE), parsed)

        def without_none(entries: list[dict]) -> list[dict]:
            return [{k: v for k, v in e.items() if v is not None} for e in entries]

        assert ours.doc.astrocyte_dump() == theirs.document.model_dump(), ops
        assert without_none(ours.applied) == without_none(theirs.applied), ops
        assert without_none(ours.skipped) == without_none(theirs.skipped), ops
        # Every key of their summaries is in ours, null ones included (MCP clients read them).
        for mine, their in zip([*ours.applied, *ours.skipped], [*theirs.applied, *theirs.skipped], strict=True):
            assert set(their) <= set(mine), (mine, their)
