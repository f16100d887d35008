"""Whether two texts that embed alike state the same fact: the rule beyond cosine.

Embeddings place "Noah Smith reported a broken laptop on March 3" and "Liam Brown reported a broken
laptop on March 4" a hair apart (cosine 0.97 with a small sentence model), yet they are two facts. So a
near-duplicate is one only when, besides the similarity, the two texts name the same things:

- the same names: capitalised words (people, places, products, months, weekdays; a sentence's common
  opening word such as "The" or "Yesterday" aside), each found in the other text in any case
  ("Yesterday Noah paid" and "Noah paid yesterday" name the same things);
- the same numbers: amounts, dates, times, versions, read as values ("25,000" is "25000", "3.50" is
  "3.5", "03" is "3", "three" is "3").

A difference in either means not a duplicate, whatever the cosine. A misspelt name counts as another
name: the safe side is to store the text (an operator can merge it later), never to drop a fact.

Pure: no database, no settings; used by the retain's near-duplicate look, the duplicate scan and the
review page's clusters.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

_WORD = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
# A sentence opens at the start, after . ! ? : ; or a line break, and after list bullets or quotes.
_OPENING = re.compile(r"(?:^|[.!?:;\n]\s*|^\s*[-*\u2022]\s*)[\"'(\[\u201c\u2018]*$")

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "thousand": 1000, "million": 1000000, "billion": 1000000000,
}

# Words that open sentences in English and name nothing; a capitalised one of these is not a name even
# when the other text lacks it ("The team met Noah" and "Our team met Noah").
_OPENERS = frozenset("""
a an the this that these those our my your his her their its we i you he she they it there here
in on at by for from to of with about after before during since until when while if as so and but or
yesterday today tomorrow also then now last next every each some all no not
""".split())


@dataclass(frozen=True)
class Facts:
    """What a text names: its names (lower case), its numbers (as values) and all its words (lower case)."""

    names: frozenset[str]
    numbers: frozenset[str]
    words: frozenset[str]


def _number_value(token: str) -> list[str]:
    if _THOUSANDS.fullmatch(token):
        token = token.replace(",", "")
    values = []
    for part in token.split(","):
        try:
            value = Decimal(part).normalize()
        except InvalidOperation:  # pragma: no cover - the pattern only lets digits and one dot through
            values.append(part)
            continue
        values.append(format(value, "f"))
    return values


def text_facts(text: str) -> Facts:
    names: set[str] = set()
    words: set[str] = set()
    numbers: set[str] = set()
    for match in _WORD.finditer(text):
        word = match.group()
        lower = word.lower()
        words.add(lower)
        if lower in NUMBER_WORDS:
            numbers.add(str(NUMBER_WORDS[lower]))
            continue
        if not word[0].isupper():
            continue
        opening = _OPENING.search(text, 0, match.start()) is not None
        if opening and lower in _OPENERS:
            continue
        names.add(lower)
    for match in _NUMBER.finditer(text):
        numbers.update(_number_value(match.group()))
    return Facts(names=frozenset(names), numbers=frozenset(numbers), words=frozenset(words))


def differences(a: str | Facts, b: str | Facts) -> list[str]:
    """The names and numbers one text holds and the other does not (empty: they name the same things)."""
    fa = a if isinstance(a, Facts) else text_facts(a)
    fb = b if isinstance(b, Facts) else text_facts(b)
    found: list[str] = []
    for mine, theirs in ((fa, fb), (fb, fa)):
        # A name matches the same word anywhere in the other text, in any case: "Yesterday Noah paid"
        # and "Noah paid yesterday" name the same things.
        found.extend(name for name in sorted(mine.names) if name not in theirs.words)
    found.extend(sorted(fa.numbers ^ fb.numbers))
    return list(dict.fromkeys(found))


def same_fact(a: str | Facts, b: str | Facts) -> bool:
    """True when two similar texts may be the same fact: no name or number differs."""
    return not differences(a, b)


def word_diff(a: str, b: str) -> list[tuple[str, str]]:
    """The two texts word by word: (``same``|``a``|``b``, words), for a cluster card's diff."""
    left, right = a.split(), b.split()
    parts: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            parts.append(("same", " ".join(left[i1:i2])))
            continue
        if i2 > i1:
            parts.append(("a", " ".join(left[i1:i2])))
        if j2 > j1:
            parts.append(("b", " ".join(right[j1:j2])))
    return parts


__all__ = ["Facts", "differences", "same_fact", "text_facts", "word_diff"]
