"""The rule beyond cosine (pure, no database): two texts are the same fact only when they name the same
names and numbers."""

from __future__ import annotations

import pytest

from banks.duplicate_rule import differences, same_fact, text_facts, word_diff

BASE = "Noah Smith reported a broken laptop to the helpdesk on March 3, 2026 and paid $250."


@pytest.mark.parametrize("other", [
    "Liam Smith reported a broken laptop to the helpdesk on March 3, 2026 and paid $250.",  # another person
    "Noah Brown reported a broken laptop to the helpdesk on March 3, 2026 and paid $250.",  # same first name
    "Noah Smith reported a broken laptop to the helpdesk on March 4, 2026 and paid $250.",  # another day
    "Noah Smith reported a broken laptop to the helpdesk on April 3, 2026 and paid $250.",  # another month
    "Noah Smith reported a broken laptop to the helpdesk on March 3, 2026 and paid $2,500.",  # another amount
    "Noah Smith reported a broken laptop to the helpdesk on March 3, 2025 and paid $250.",  # another year
    "Noah Smith reported a broken laptop to the Tokyo helpdesk on March 3, 2026 and paid $250.",  # a place added
])
def test_other_people_amounts_and_dates_are_not_the_same_fact(other):
    assert not same_fact(BASE, other)
    assert differences(BASE, other)


@pytest.mark.parametrize("other", [
    "On March 3, 2026 Noah Smith reported a broken laptop to the helpdesk and paid $250.",  # reordered
    "Noah Smith reported a brokn laptop to the helpdesk on March 3, 2026 and paid $250.",  # a typo
    "Noah Smith paid $250 after he reported a broken laptop to the helpdesk on March 3, 2026.",  # rephrased
    "noah smith reported a broken laptop to the helpdesk on march 3, 2026 and paid $250",  # case
    "Noah Smith reported a broken laptop to the helpdesk on March 03, 2026 and paid $250.00.",  # 03, 250.00
])
def test_rephrasings_typos_and_reorderings_are_the_same_fact(other):
    assert same_fact(BASE, other), differences(BASE, other)


def test_numbers_are_read_as_values():
    assert text_facts("It cost 25,000 euros, three times.").numbers == {"25000", "3"}
    assert same_fact("Paid 3.50 on 2026-03-04", "Paid 3.5 on 2026-3-4")
    assert not same_fact("Version 1.2 shipped", "Version 1.3 shipped")


def test_a_common_sentence_opener_is_not_a_name_but_a_proper_one_is():
    assert same_fact("Yesterday Noah paid the bill.", "Noah paid the bill yesterday.")
    assert same_fact("The team met Noah.", "Our team met Noah.")
    assert not same_fact("Berlin hosted the team.", "Tokyo hosted the team.")


def test_word_diff_marks_the_words_each_side_holds():
    assert word_diff("Noah paid 5 dollars", "Liam paid 5 euros") == [
        ("a", "Noah"), ("b", "Liam"), ("same", "paid 5"), ("a", "dollars"), ("b", "euros")]
