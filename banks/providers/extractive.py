"""The ``extractive`` language model: no model, answers stitched from ranked memories.

Every method is deterministic and cheap, so MemoryHub works end to end with
nothing configured and tests can assert exact results.
"""

from __future__ import annotations

import re
from collections import Counter

from banks.providers.entity_types import GIVEN_NAMES, entity_type
from banks.providers.llm_types import Answer, Coverage, ExtractedEntity, ExtractedFact, Gap, Passage

# A full stop after a title ends no sentence: "Mr. Okafor" stays one sentence.
_SENTENCE = re.compile(r"(?<=[.!?])(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\bMx\.)(?<!\bDr\.)(?<!\bProf\.)(?<!\bSt\.)\s+|\n+")
_WORD = re.compile(r"[\w'-]+", re.UNICODE)
_STOP = frozenset(
    "a an and are as at be but by did do does for from had has have how i in into is it its me my of on or "
    "our so that the their them they this to was we were what when where which who why will with you your "
    "about after before can could should would there here than then also just not no yes".split()
)
# Capitalised only because they open a sentence. A capitalised first word that is none of these
# (nor one of ``_STOP``) is taken as a name: "Kasimir said ..." names Kasimir.
_STARTERS = frozenset(
    "yesterday today tomorrow tonight last next then now also however meanwhile after before during since "
    "please thanks hello hi dear maybe perhaps every each some many most all both "
    # pronouns and determiners
    "he she him her his hers we us you they them it its i me my mine our ours their theirs these those "
    "this that there here someone something everyone everything anyone anything nobody nothing none another "
    "other such any either neither one two three first second third finally "
    # prepositions and conjunctions
    "through with without under over between among until till via despite like unlike against along behind "
    "beyond inside outside onto toward towards upon within across around near if unless although though "
    "while because once whether instead besides plus "
    # interjections and replies
    "yes yeah yep no nope ok okay sure sorry oh ah wow well great good nice cool fine awesome glad happy "
    "congratulations absolutely definitely exactly really actually honestly unfortunately luckily hopefully "
    "anyway indeed still even only just almost already again soon often never always sometimes usually "
    "not "
    # verbs that open diary-style or imperative sentences
    "had got went made took saw met bought found spent began came did said told gave left kept "
    "let let's lets tell remind try use make check keep look take start visit add choose avoid ask be get go "
    "find consider remember note see think hope love need want have do can could would should will may "
    "might must shall is are was were am sounds seems "
    # weekdays and months: as before, a lone one that opens a sentence is not taken
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july "
    "august september october november december".split()
)
# Words that say a name follows. The name is kept without them, so "Mr. Okafor", "Aunt Dorota" and a
# later plain "Okafor" or "Dorota" are one entity.
_TITLES = frozenset("mr mrs ms miss mx dr prof professor sir dame madam aunt auntie uncle grandma grandpa granny "
                    "cousin captain coach".split())
# After a sentence-opening verb comes its object ("Book a table", "Enjoy your trip"); after a name, a verb.
_OBJECTS = frozenset("the a an your my his her their our its this that these those some any it them me us you".split())
# Runs of capitalised words (allowing "of"/"de" inside), e.g. "Alice Smith", "Bank of Ireland".
_PROPER = re.compile(r"\b([A-Z][\w'-]*(?:\s+(?:of|de|von|van|the)?\s*[A-Z][\w'-]*)*)")
_IMPORTANT = {
    "preference": (r"\b(prefer|prefers|like|likes|love|loves|hate|hates|dislike|favou?rite|want|wants)\b", 0.8),
    "fact": (r"\b(is|am|are|was|work|works|live|lives|born|named|called|use|uses|own|owns)\b", 0.6),
    "plan": (r"\b(will|plan|plans|going to|tomorrow|next week|deadline|remind)\b", 0.7),
    "instruction": (r"\b(always|never|must|should|don't|do not)\b", 0.9),
}


def stem(word: str) -> str:
    """A crude suffix stripper: enough that "refunds" meets "refund" and "escalations" "escalation"."""
    if word.endswith(("'s", "’s")):
        word = word[:-2]
    for suffix in ("ations", "ation", "ences", "ence", "ances", "ance", "ments", "ment", "ings", "ing", "ies", "es",
                   "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def terms(text: str) -> list[str]:
    return [stem(w) for w in (t.lower() for t in _WORD.findall(text)) if w not in _STOP and len(w) > 1]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


_POSSESSIVE = re.compile(r"'s$")


def _contraction(word: str) -> bool:
    """"I'm", "It's", "Don't": grammar, never a name ("Dmitri's" is a name)."""
    base, _, _ = word.lower().partition("'")
    return word.lower().endswith("n't") or ("'" in word and (base in _STOP or base in _STARTERS))


def _opens_sentence(words: list[str], after: list[str]) -> bool:
    """Whether the first word of a run that opens a sentence is there only because sentences open with
    something: a function word, pronoun, reply, weekday or month, a common opening verb, an -ed/-ing/-ly
    word ("Cleaned", "Finally") that is no given name, a contraction, or a lone word followed by an
    object ("Enjoy your trip"). Otherwise it is a name: "Kasimir said ..."."""
    first = words[0].lower()
    if first in _STOP or first in _STARTERS or _contraction(words[0]):
        return True
    if first not in GIVEN_NAMES and len(first) >= 5 and first.endswith(("ed", "ing", "ly")):
        return True
    return len(words) == 1 and bool(after) and after[0].lower().strip(",;:") in _OBJECTS


class ExtractiveLanguageModel:
    name = "extractive"

    def answer(self, query: str, passages: list[Passage], *, max_chars: int | None = None) -> Answer:
        if not passages:
            return Answer(text="I have no memories about that.", cited_ids=[], confidence=0.0)
        wanted = set(terms(query))
        scored: list[tuple[float, int, int, str, str]] = []
        for order, passage in enumerate(passages):
            for sentence in sentences(passage.text):
                overlap = len(wanted & set(terms(sentence)))
                # Rank first by overlap with the question, then by the memory's own rank.
                scored.append((overlap + passage.score, overlap, -order, sentence, passage.memory_id))
        scored.sort(reverse=True)
        if wanted and any(item[1] >= 1 for item in scored):
            # Sentences sharing no word with the question only pad the answer; leave them out.
            scored = [item for item in scored if item[1] >= 1]
        chosen: list[tuple[str, str]] = []
        budget = max_chars or 1200
        used = 0
        for _, _, _, sentence, memory_id in scored:
            if used + len(sentence) > budget and chosen:
                break
            if any(sentence == s for s, _ in chosen):
                continue
            chosen.append((sentence, memory_id))
            used += len(sentence) + 1
            if len(chosen) >= 5:
                break
        cited: list[str] = []
        for _, memory_id in chosen:
            if memory_id not in cited:
                cited.append(memory_id)
        top_overlap = max((len(wanted & set(terms(s))) for s, _ in chosen), default=0)
        confidence = round(min(1.0, 0.3 + 0.7 * (top_overlap / max(1, len(wanted)))), 3) if wanted else 0.5
        text = " ".join(s if s.endswith((".", "!", "?")) else s + "." for s, _ in chosen)
        return Answer(text=text, cited_ids=cited, confidence=confidence)

    def extract_entities(self, text: str) -> list[ExtractedEntity]:
        found: dict[str, ExtractedEntity] = {}
        for sentence in sentences(text):
            for match in _PROPER.finditer(sentence):
                words = match.group(1).split()
                before = sentence[:match.start()].split()
                titled = bool(before) and before[-1].rstrip(".").lower() in _TITLES
                while words and words[0].lower() in _TITLES:
                    words, titled = words[1:], True
                after = sentence[match.end():].split()
                if words and match.start() == 0 and not titled and _opens_sentence(words, after):
                    words = words[1:]
                if not words:
                    continue
                name = _POSSESSIVE.sub("", " ".join(words))
                if name.lower() in _STOP or len(name) < 2:
                    continue
                # A title names a person whatever the name looks like.
                kind = "PERSON" if titled else entity_type(name, before[-1] if before else "")
                found.setdefault(name.lower(), ExtractedEntity(name=name, entity_type=kind))
        return list(found.values())

    def extract_facts(self, user_message: str, assistant_message: str = "") -> list[ExtractedFact]:
        facts: list[ExtractedFact] = []
        for speaker, message in (("user", user_message), ("assistant", assistant_message)):
            for sentence in sentences(message):
                if sentence.endswith("?") or len(terms(sentence)) < 3:
                    continue
                category, importance = "fact", 0.3
                for name, (pattern, weight) in _IMPORTANT.items():
                    if re.search(pattern, sentence, re.IGNORECASE) and weight > importance:
                        category, importance = name, weight
                if speaker == "assistant":
                    # What the assistant says is less often a durable fact about the user.
                    importance = round(importance * 0.6, 3)
                facts.append(ExtractedFact(text=sentence, category=category, importance=importance))
        return facts

    def summarize(self, texts: list[str], *, title: str = "") -> str:
        counts = Counter(t for text in texts for t in set(terms(text)))
        ranked = sorted(
            ((sum(counts[t] for t in set(terms(s))), s) for text in texts for s in sentences(text)),
            key=lambda pair: -pair[0],
        )
        seen: list[str] = []
        for _, sentence in ranked:
            if sentence not in seen:
                seen.append(sentence)
            if len(seen) >= 8:
                break
        return "\n".join(f"- {s}" for s in seen)

    def judge_coverage(self, scope: str, texts: list[str]) -> Coverage:
        words = [w.lower() for w in _WORD.findall(scope) if w.lower() not in _STOP and len(w) > 1]
        wanted = list(dict.fromkeys(stem(w) for w in words))
        label = {stem(w): w for w in reversed(words)}
        if not wanted:
            return Coverage(score=1.0 if texts else 0.0, gaps=[])
        counts = Counter(t for text in texts for t in set(terms(text)))
        gaps: list[Gap] = []
        for term in wanted:
            n = counts.get(term, 0)
            topic = label.get(term, term)
            if n == 0:
                gaps.append(Gap(topic=topic, severity="high", reason=f"No memory mentions '{topic}'."))
            elif n == 1:
                gaps.append(Gap(topic=topic, severity="medium", reason=f"Only one memory mentions '{topic}'."))
        covered = sum(1 for t in wanted if counts.get(t, 0) > 0)
        score = round(covered / len(wanted), 3)
        order = {"high": 0, "medium": 1, "low": 2}
        gaps.sort(key=lambda g: order[g.severity])
        return Coverage(score=score, gaps=gaps)
