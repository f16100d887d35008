from __future__ import annotations

import pytest

from banks.live.structured_doc import (
    StructuredDocError,
    StructuredDocument,
    doc_from_sections,
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


def test_render_is_exact():
    assert render_markdown(StructuredDocument.model_validate(DOC)) == RENDERED
    assert render_markdown(StructuredDocument()) == ""


def test_parse_round_trips_rendered_documents():
    assert parse_markdown(RENDERED) == StructuredDocument.model_validate(DOC)


def test_parse_puts_leading_text_in_an_overview_and_treats_rules_as_blank():
    doc = parse_markdown("Intro line one\nline two\n\n---\n\n# Goals\n* a\n+ b\n\n1) x\n2) y\n")
    assert [s.id for s in doc.sections] == ["overview", "goals"]
    assert doc.sections[0].blocks[0].text == "Intro line one line two"
    assert doc.sections[1].level == 1
    assert [b.type for b in doc.sections[1].blocks] == ["bullet_list", "ordered_list"]


def test_headings_inside_code_fences_are_code():
    doc = parse_markdown("## Code\n\n```sh\n# not a heading\n\nls\n```\n")
    assert len(doc.sections) == 1
    assert doc.sections[0].blocks[0].text == "# not a heading\n\nls"


def test_slugs_and_unique_ids():
    assert slugify_heading("Alice's Preferences & Tools!") == "alice-s-preferences-tools"
    assert slugify_heading("!!!") == "section"
    assert unique_id("tools", ["tools", "tools-2"]) == "tools-3"
    doc = parse_markdown("# Notes\n\na\n\n# Notes\n\nb\n")
    assert [s.id for s in doc.sections] == ["notes", "notes-2"]


def test_sections_in_the_documented_title_content_shape():
    doc = doc_from_sections([
        {"title": "Communication", "content": "Prefers async stand-ups."},
        {"title": "Tools", "content": "Python for data work; VS Code.\n\n- Cursor\n- Vim"},
    ])
    assert [s.id for s in doc.sections] == ["communication", "tools"]
    assert doc.sections[1].blocks[1].items == ["Cursor", "Vim"]


def test_sections_in_the_real_schema_and_errors_name_the_field():
    doc = doc_from_sections([{"heading": "Tools", "blocks": [{"type": "paragraph", "text": "x"}]}])
    assert doc.sections[0].id == "tools"
    with pytest.raises(StructuredDocError, match=r"sections\[0\]\.blocks\.0"):
        doc_from_sections([{"heading": "Tools", "blocks": [{"type": "table"}]}])
    with pytest.raises(StructuredDocError, match=r"sections\[1\]\.title"):
        doc_from_sections([{"title": "A", "content": ""}, {"content": "no title"}])
    with pytest.raises(StructuredDocError, match="duplicate section id"):
        doc_from_sections([{"id": "a", "heading": "A"}, {"id": "a", "heading": "B"}])
