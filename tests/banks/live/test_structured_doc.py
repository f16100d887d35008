"""Structured documents: schema, slugs, exact rendering, parsing rules, round trips, input shapes."""

from __future__ import annotations

import importlib
import random

import pytest
from pydantic import ValidationError

from banks.live.structured_doc import (
    BulletListBlock,
    CodeBlock,
    OrderedListBlock,
    ParagraphBlock,
    Section,
    StructuredDocError,
    StructuredDocument,
    blocks_from_markdown,
    doc_from_sections,
    load_document,
    parse_markdown,
    render_markdown,
    slugify_heading,
    unique_id,
)

DOC = {
    "version": 1,
    "sections": [
        {"id": "tools", "heading": "Tools", "level": 2, "blocks": [
            {"type": "paragraph", "text": "Python; VS Code"},
            {"type": "bullet_list", "items": ["async", "slack"]},
            {"type": "ordered_list", "items": ["first", "second"]},
            {"type": "code", "language": "python", "text": "print(1)"},
        ]},
        {"id": "people", "heading": "People", "level": 3, "blocks": []},
    ],
}

RENDERED = (
    "## Tools\n\nPython; VS Code\n\n- async\n- slack\n\n1. first\n2. second\n\n```python\nprint(1)\n```"
    "\n\n### People\n"
)


def doc(*sections: dict) -> StructuredDocument:
    return StructuredDocument.model_validate({"sections": list(sections)})


class TestSchema:
    def test_defaults(self):
        section = Section(id="a", heading="A")
        assert section.level == 2 and section.blocks == []
        assert StructuredDocument().version == 1 and StructuredDocument().sections == []
        assert CodeBlock(type="code", text="x").language == ""

    def test_blocks_are_a_union_on_type(self):
        d = StructuredDocument.model_validate(DOC)
        assert [type(b) for b in d.sections[0].blocks] == [ParagraphBlock, BulletListBlock, OrderedListBlock,
                                                          CodeBlock]
        assert d.model_dump() == DOC

    @pytest.mark.parametrize("bad", [
        {"id": "a", "heading": "A", "title": "x"},                                    # extra key on section
        {"id": "a", "heading": "A", "level": 0},
        {"id": "a", "heading": "A", "level": 7},
        {"id": "", "heading": "A"},
        {"heading": "A"},                                                             # id required
        {"id": "a", "heading": "A", "blocks": [{"type": "table", "text": "x"}]},
        {"id": "a", "heading": "A", "blocks": [{"type": "paragraph", "text": "x", "bold": True}]},
        {"id": "a", "heading": "A", "blocks": [{"type": "bullet_list", "items": "x"}]},
        {"id": "a", "heading": "A", "blocks": [{"type": "code"}]},
        {"id": "a", "heading": "A", "blocks": [{"text": "no type"}]},
    ])
    def test_invalid_sections_are_rejected(self, bad):
        with pytest.raises(ValidationError):
            doc(bad)

    def test_extra_keys_on_the_document_are_rejected(self):
        with pytest.raises(ValidationError):
            StructuredDocument.model_validate({"sections": [], "title": "x"})

    def test_section_lookup(self):
        d = StructuredDocument.model_validate(DOC)
        assert d.section("people").heading == "People" and d.section("nope") is None


class TestSlugs:
    @pytest.mark.parametrize(("heading", "slug"), [
        ("Tools", "tools"),
        ("Alice's Preferences & Tools!", "alice-s-preferences-tools"),
        ("  Leading and trailing  ", "leading-and-trailing"),
        ("C++ / C#", "c-c"),
        ("Ünïcode Héllo", "n-code-h-llo"),
        ("v2.0 release", "v2-0-release"),
        ("!!!", "section"),
        ("", "section"),
        ("---a---b---", "a-b"),
    ])
    def test_slugify(self, heading, slug):
        assert slugify_heading(heading) == slug

    def test_unique_id(self):
        assert unique_id("tools", []) == "tools"
        assert unique_id("tools", ["tools"]) == "tools-2"
        assert unique_id("tools", ["tools", "tools-2"]) == "tools-3"
        assert unique_id("tools", {"tools", "tools-3"}) == "tools-2"
        assert unique_id("tools", (s for s in ["tools", "tools-2", "tools-3"])) == "tools-4"


class TestRender:
    def test_full_document_exactly(self):
        assert render_markdown(StructuredDocument.model_validate(DOC)) == RENDERED

    def test_empty_document_is_the_empty_string(self):
        assert render_markdown(StructuredDocument()) == ""

    def test_section_without_blocks_is_its_heading_line(self):
        assert render_markdown(doc({"id": "a", "heading": "A"})) == "## A\n"

    def test_levels(self):
        assert render_markdown(doc({"id": "a", "heading": "A", "level": 1},
                                   {"id": "b", "heading": "B", "level": 6})) == "# A\n\n###### B\n"

    def test_code_without_language_and_multiline(self):
        d = doc({"id": "a", "heading": "A", "blocks": [{"type": "code", "text": "x = 1\n\ny = 2"}]})
        assert render_markdown(d) == "## A\n\n```\nx = 1\n\ny = 2\n```\n"

    def test_ordered_lists_number_from_one(self):
        items = [f"i{n}" for n in range(1, 12)]
        d = doc({"id": "a", "heading": "A", "blocks": [{"type": "ordered_list", "items": items}]})
        assert render_markdown(d).splitlines()[2:] == [f"{n}. i{n}" for n in range(1, 12)]

    def test_sections_are_joined_by_one_blank_line(self):
        d = doc({"id": "a", "heading": "A", "blocks": [{"type": "paragraph", "text": "x"}]},
                {"id": "b", "heading": "B", "blocks": [{"type": "paragraph", "text": "y"}]})
        assert render_markdown(d) == "## A\n\nx\n\n## B\n\ny\n"


class TestParse:
    def test_headings_start_sections(self):
        d = parse_markdown("# One\n\ntext\n\n### Three\n")
        assert [(s.id, s.heading, s.level) for s in d.sections] == [("one", "One", 1), ("three", "Three", 3)]

    def test_text_before_the_first_heading_goes_to_overview(self):
        d = parse_markdown("Intro line one\nline two\n\n# Goals\n\nship\n")
        assert (d.sections[0].id, d.sections[0].heading, d.sections[0].level) == ("overview", "Overview", 2)
        assert d.sections[0].blocks == [ParagraphBlock(type="paragraph", text="Intro line one line two")]

    def test_blank_text_before_the_first_heading_makes_no_overview(self):
        assert [s.id for s in parse_markdown("\n\n  \n## A\n").sections] == ["a"]

    def test_markdown_without_headings_is_one_overview_section(self):
        d = parse_markdown("just a note")
        assert [(s.id, len(s.blocks)) for s in d.sections] == [("overview", 1)]

    def test_empty_and_blank_text_is_an_empty_document(self):
        assert parse_markdown("") == StructuredDocument()
        assert parse_markdown("\n  \n---\n") == StructuredDocument()

    @pytest.mark.parametrize("rule", ["---", "***", "___", "-----", "  ***  "])
    def test_horizontal_rules_are_blank_lines(self, rule):
        d = parse_markdown(f"## A\n\none\n{rule}\ntwo\n")
        assert [b.text for b in d.sections[0].blocks] == ["one", "two"]

    def test_bullet_lists_accept_dash_star_and_plus(self):
        d = parse_markdown("## A\n\n- a\n* b\n+ c\n")
        assert d.sections[0].blocks == [BulletListBlock(type="bullet_list", items=["a", "b", "c"])]

    def test_ordered_lists_accept_dot_and_paren(self):
        d = parse_markdown("## A\n\n1. a\n2) b\n10. c\n")
        assert d.sections[0].blocks == [OrderedListBlock(type="ordered_list", items=["a", "b", "c"])]

    def test_mixed_chunks_are_paragraphs_joined_by_spaces(self):
        d = parse_markdown("## A\n\n- a\nplain\n\n1. a\n- b\n\n  spaced  \n  out\n")
        assert [b.model_dump() for b in d.sections[0].blocks] == [
            {"type": "paragraph", "text": "- a plain"},
            {"type": "paragraph", "text": "1. a - b"},
            {"type": "paragraph", "text": "spaced out"},
        ]

    def test_fenced_code_keeps_blank_lines_headings_and_rules(self):
        d = parse_markdown("## Code\n\n```sh\n# not a heading\n\n---\nls\n```\n")
        assert len(d.sections) == 1
        assert d.sections[0].blocks == [CodeBlock(type="code", language="sh", text="# not a heading\n\n---\nls")]

    def test_fence_right_after_text_starts_a_new_block(self):
        d = parse_markdown("## A\n\nsee:\n```\nx\n```\nafter\n")
        assert [b.type for b in d.sections[0].blocks] == ["paragraph", "code", "paragraph"]

    def test_unclosed_fence_runs_to_the_end(self):
        d = parse_markdown("## A\n\n```py\nx\n\n## still code\n")
        assert d.sections[0].blocks == [CodeBlock(type="code", language="py", text="x\n\n## still code")]

    def test_heading_text_is_kept_literally(self):
        d = parse_markdown("## C#\n\n## Q&A ##\n")
        assert [(s.id, s.heading) for s in d.sections] == [("c", "C#"), ("q-a", "Q&A ##")]

    def test_lines_that_are_not_atx_headings(self):
        d = parse_markdown("#hashtag\n\n####### seven\n")
        assert [b.text for b in d.sections[0].blocks] == ["#hashtag", "####### seven"]
        assert d.sections[0].id == "overview"

    def test_repeated_headings_get_unique_ids(self):
        d = parse_markdown("# Notes\n\na\n\n## Notes\n\nb\n\n# Notes\n")
        assert [s.id for s in d.sections] == ["notes", "notes-2", "notes-3"]

    def test_overview_id_is_reserved_against_a_later_overview_heading(self):
        assert [s.id for s in parse_markdown("x\n\n## Overview\n").sections] == ["overview", "overview-2"]

    def test_crlf_input(self):
        assert parse_markdown("## A\r\n\r\n- x\r\n- y\r\n") == doc(
            {"id": "a", "heading": "A", "blocks": [{"type": "bullet_list", "items": ["x", "y"]}]})


ROUND_TRIP_DOCS = [
    DOC,
    {"version": 1, "sections": []},
    {"version": 1, "sections": [{"id": "a", "heading": "A", "level": 1, "blocks": []}]},
    {"version": 1, "sections": [
        {"id": "overview", "heading": "Overview", "level": 2,
         "blocks": [{"type": "paragraph", "text": "Alice prefers async communication."}]},
        {"id": "c", "heading": "C#", "level": 4, "blocks": [
            {"type": "code", "language": "", "text": "x = 1\n\n# comment\n---"},
            {"type": "code", "language": "c++", "text": ""},
            {"type": "ordered_list", "items": ["a", "b", "c"]},
            {"type": "bullet_list", "items": ["one item"]},
        ]},
        {"id": "c-2", "heading": "C", "level": 6, "blocks": [{"type": "paragraph", "text": "Trailing words."}]},
    ]},
]


@pytest.mark.parametrize("data", ROUND_TRIP_DOCS)
def test_round_trip(data):
    d = StructuredDocument.model_validate(data)
    assert parse_markdown(render_markdown(d)) == d


WORDS = ["alpha", "beta", "C#", "v2.0", "a-b", "x_y", "Ünï", "(note)", "1st", "tea & cake"]


def random_doc(rng: random.Random) -> StructuredDocument:
    """A document whose rendering is unambiguous: ids are heading slugs, no text looks like markup."""

    def phrase() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))

    def block() -> dict:
        kind = rng.choice(["paragraph", "bullet_list", "ordered_list", "code"])
        if kind == "paragraph":
            return {"type": kind, "text": phrase()}
        if kind == "code":
            return {"type": kind, "language": rng.choice(["", "python", "sh"]),
                    "text": "\n".join(phrase() for _ in range(rng.randint(0, 3)))}
        return {"type": kind, "items": [phrase() for _ in range(rng.randint(1, 4))]}

    sections: list[dict] = []
    ids: list[str] = []
    for _ in range(rng.randint(0, 5)):
        heading = phrase()
        ids.append(unique_id(slugify_heading(heading), ids))
        sections.append({"id": ids[-1], "heading": heading, "level": rng.randint(1, 6),
                         "blocks": [block() for _ in range(rng.randint(0, 4))]})
    return StructuredDocument.model_validate({"sections": sections})


def test_round_trip_of_random_unambiguous_documents():
    rng = random.Random(7)
    for _ in range(300):
        d = random_doc(rng)
        assert parse_markdown(render_markdown(d)) == d


def test_canonical_markdown_renders_back_unchanged():
    assert render_markdown(parse_markdown(RENDERED)) == RENDERED


def test_blocks_from_markdown_ignores_headings():
    assert blocks_from_markdown("# x\n\n- a") == [ParagraphBlock(type="paragraph", text="# x"),
                                                  BulletListBlock(type="bullet_list", items=["a"])]
    assert blocks_from_markdown("") == []


class TestDocFromSections:
    def test_documented_title_content_shape(self):
        d = doc_from_sections([
            {"title": "Communication", "content": "Prefers async stand-ups."},
            {"title": "Tools", "content": "Python for data work; VS Code.\n\n- Cursor\n- Vim"},
        ])
        assert d.model_dump() == {"version": 1, "sections": [
            {"id": "communication", "heading": "Communication", "level": 2,
             "blocks": [{"type": "paragraph", "text": "Prefers async stand-ups."}]},
            {"id": "tools", "heading": "Tools", "level": 2, "blocks": [
                {"type": "paragraph", "text": "Python for data work; VS Code."},
                {"type": "bullet_list", "items": ["Cursor", "Vim"]}]},
        ]}

    def test_documented_shape_with_optional_id_level_and_no_content(self):
        d = doc_from_sections([{"title": " Goals ", "id": "g", "level": 3}, {"title": "Goals"}])
        assert [(s.id, s.heading, s.level, s.blocks) for s in d.sections] == [
            ("g", "Goals", 3, []), ("goals", "Goals", 2, [])]

    def test_real_schema(self):
        d = doc_from_sections([{"heading": "Tools", "blocks": [{"type": "paragraph", "text": "x"}]},
                               {"id": "own", "heading": "Tools", "level": 4}])
        assert [(s.id, s.level) for s in d.sections] == [("tools", 2), ("own", 4)]

    def test_both_shapes_mixed_and_ids_made_unique(self):
        d = doc_from_sections([{"title": "Tools", "content": "a"}, {"heading": "Tools"}, {"title": "Tools"}])
        assert [s.id for s in d.sections] == ["tools", "tools-2", "tools-3"]

    def test_explicit_ids_are_reserved_before_generated_ones(self):
        d = doc_from_sections([{"heading": "Tools"}, {"id": "tools", "heading": "Other"}])
        assert [s.id for s in d.sections] == ["tools-2", "tools"]

    def test_a_rendered_and_parsed_seed_document(self):
        d = doc_from_sections([{"title": "Tools", "content": "```py\nx\n```\n\n1. a\n2. b"}])
        assert render_markdown(d) == "## Tools\n\n```py\nx\n```\n\n1. a\n2. b\n"

    @pytest.mark.parametrize(("sections", "message"), [
        ("not a list", "sections: must be a list"),
        ([{"title": "A"}, "x"], "sections[1]: must be an object"),
        ([{"content": "no title"}], "sections[0].title: Field required"),
        ([{"title": "  ", "content": "x"}], "sections[0].title: must be a non-empty string"),
        ([{"title": 5}], "sections[0].title: must be a non-empty string"),
        ([{"title": "A", "content": ["x"]}], "sections[0].content: must be a string"),
        ([{"title": "A", "content": "x", "blocks": []}], "sections[0].blocks: Extra inputs are not permitted"),
        ([{"title": "A", "heading": "A"}], "sections[0].heading: Extra inputs are not permitted"),
        ([{"title": "A", "level": 9}], "sections[0].level: Input should be less than or equal to 6"),
        ([{"heading": "A", "blocks": [{"type": "table"}]}], "sections[0].blocks[0].type: Input tag 'table'"),
        ([{"heading": "A", "blocks": [{"type": "paragraph"}]}], "sections[0].blocks[0].text: Field required"),
        ([{"heading": "A", "colour": "red"}], "sections[0].colour: Extra inputs are not permitted"),
        ([{"blocks": []}], "sections[0].heading: Field required"),
        ([{"id": 3, "heading": "A"}], "sections[0].id: Input should be a valid string"),
        ([{"id": ["x"], "heading": "A"}], "sections[0].id: Input should be a valid string"),
        ([{"id": "a", "heading": "A"}, {"id": "a", "heading": "B"}], "sections[1].id: duplicate section id 'a'"),
    ])
    def test_errors_name_the_field(self, sections, message):
        with pytest.raises(StructuredDocError) as caught:
            doc_from_sections(sections)
        assert str(caught.value).startswith(message)
        assert isinstance(caught.value, ValueError)

    def test_empty_list_is_an_empty_document(self):
        assert doc_from_sections([]) == StructuredDocument()


class TestLoadDocument:
    def test_empty_values_are_an_empty_document(self):
        assert load_document(None) == StructuredDocument()
        assert load_document({}) == StructuredDocument()

    def test_valid_document(self):
        loaded = load_document(DOC)
        assert loaded.astrocyte_dump() == StructuredDocument.model_validate(DOC).model_dump()
        # A document stored before blocks had ids reads with derived ids, the same on every read.
        assert all(b.id for s in loaded.sections for b in s.blocks)
        assert loaded == load_document(DOC)

    def test_invalid_document_names_the_field(self):
        bad = {"sections": [{"id": "a", "heading": "A", "blocks": [{"type": "bullet_list", "items": [1]}]}]}
        with pytest.raises(StructuredDocError, match=r"^structured_doc\.sections\[0\]\.blocks\[0\]\.items\[0\]: "):
            load_document(bad)


class TestAstrocyteParity:
    """Same output as the astrocyte library (a pinned test dependency) for the same input."""

    @pytest.fixture
    def astro(self):
        # If the module moves in a new astrocyte release, these tests must fail, not skip.
        return importlib.import_module("astrocyte.pipeline.structured_doc")

    @pytest.mark.parametrize("data", ROUND_TRIP_DOCS)
    def test_render(self, astro, data):
        theirs = astro.render_document(astro.StructuredDocument.model_validate(data))
        assert render_markdown(StructuredDocument.model_validate(data)) == theirs

    @pytest.mark.parametrize("text", [
        RENDERED,
        "Intro\nmore\n\n---\n\n# Goals\n* a\n+ b\n\n1) x\n2) y\n",
        "## C#\n\n## Q&A ##\n",
        "## Code\n\n```sh\nx = 1\n\ny = 2\n```\n",
        "# Notes\n\na\n\n## Notes\n\nb\n",
        "x\n\n## Overview\n",
        "#hashtag\n\n- a\nplain\n",
        "",
    ])
    def test_parse(self, astro, text):
        assert parse_markdown(text).model_dump() == astro.parse_markdown(text).model_dump()

    def test_deliberate_difference_fenced_code_is_left_alone(self, astro):
        # Astrocyte splits a section at "# comment" inside a fence and blanks "---" lines in code;
        # both lose code, so here everything inside a fence stays code.
        text = "## Code\n\n```sh\n# comment\nls\n```\n"
        assert len(astro.parse_markdown(text).sections) == 2
        assert parse_markdown(text).sections[0].blocks == [CodeBlock(type="code", language="sh", text="# comment\nls")]
        text = "## Code\n\n```yaml\n---\na: 1\n```\n"
        assert astro.parse_markdown(text).sections[0].blocks[0].text == "\na: 1"
        assert parse_markdown(text).sections[0].blocks[0].text == "---\na: 1"

    def test_random_documents_render_and_parse_the_same(self, astro):
        rng = random.Random(11)
        for _ in range(200):
            d = random_doc(rng)
            text = render_markdown(d)
            assert text == astro.render_document(astro.StructuredDocument.model_validate(d.model_dump()))
            assert parse_markdown(text).model_dump() == astro.parse_markdown(text).model_dump()

    def test_slugs(self, astro):
        for heading in ["Tools", "Alice's Preferences & Tools!", "Ünïcode Héllo", "!!!", "", "C++ / C#"]:
            assert slugify_heading(heading) == astro.slugify_heading(heading)
