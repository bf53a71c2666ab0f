"""Checking canon facts against the text: who a description belongs to, and what it says.

Precision before recall. A value counts only where it describes its noun ("his green eyes",
"her hair was gold", "Basil was tall"), never where a colour word merely stands nearby ("his
eye fell on the yellow book") or belongs to a name ("Dorian Gray"). A description is pinned
on someone only through a possessive name ("Kael's eyes"), "the eyes of Kael", a subject in
the same clause, or a pronoun whose one candidate is named in the same paragraph, at most two
sentences back; in dialogue only the first two count.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from controlroom.tools.canon import Cast, Fact, Gender
from controlroom.tools.text import Document, inside, quoted_spans, read_document
from controlroom.tools.vocabulary import KINDS, PREDICATE_WORDS, FactKind, checkability

_WORD = re.compile(r"[A-Za-z]+(?:[-'’][A-Za-z]+)*")
_CLAUSE_BREAK = re.compile(r"[.;:!?()“”\"—–]")
_COPULAS = frozenset("was were is are seemed looked grew turned became appeared stood".split())
_ADVERBS = frozenset(
    "very quite rather so too still almost now always extremely remarkably unusually singularly "
    "strangely wonderfully somewhat a an of the deepest deep palest bright clear".split()
)
_SHADES = frozenset("dark light pale deep bright".split())
_NEGATIONS = frozenset("not never no nor".split())
_POSSESSIVES: dict[str, Gender | None] = {"his": "he", "her": "she", "their": None}
_SUBJECTS: dict[str, Gender | None] = {"he": "he", "she": "she", "they": None}
_SUBJECT_LINKS = frozenset("with had has having".split())
_PHRASE_MODIFIER_BLOCKERS = frozenset(
    "the a an his her their its my your our on at to into upon onto towards toward from in of "
    "by for over under through was were is are had has have fell rested turned looked and".split()
)


@dataclass(frozen=True)
class Conflict:
    entity: str
    attribute: str
    canon_value: str
    found: str
    path: str
    line: int
    sentence: str
    quote: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "entity": self.entity,
            "attribute": self.attribute,
            "canon_value": self.canon_value,
            "found": self.found,
            "path": self.path,
            "line": self.line,
            "sentence": self.sentence,
            "quote": self.quote,
        }

    def describe(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.entity}'s {self.attribute} is "
            f"'{self.found}' but canon says '{self.canon_value}' (in “{self.quote}”)"
        )


@dataclass(frozen=True)
class Statement:
    """One description found in the text: who, which attribute, which classes, where."""

    entity: str
    kind: FactKind
    words: str
    classes: frozenset[str]
    line: int
    sentence: str
    quote: str


@dataclass(frozen=True, slots=True)
class _Tok:
    start: int
    end: int
    text: str
    #: The word lower-cased with curly apostrophes straightened, the form every lookup
    #: uses: computed once per token (it was recomputed at each of a dozen lookups).
    low: str

    @classmethod
    def of(cls, start: int, end: int, text: str) -> _Tok:
        return cls(start, end, text, text.lower().replace("’", "'"))


class _Reader:
    """Walks one document's paragraphs, keeping who was named recently in each."""

    def __init__(self, doc: Document, cast: Cast) -> None:
        self.doc = doc
        self.cast = cast

    def statements(self) -> list[Statement]:
        found: list[Statement] = []
        by_block: dict[int, list[int]] = {}
        for index, sentence in enumerate(self.doc.sentences):
            by_block.setdefault(sentence.block, []).append(index)
        for block_index, indexes in by_block.items():
            block = self.doc.blocks[block_index]
            quotes = quoted_spans(block.text)
            history: list[tuple[list[tuple[int, int, str]], int, int]] = []
            for index in indexes:
                sentence = self.doc.sentences[index]
                mentions = [
                    (sentence.start + s, sentence.start + e, entity)
                    for s, e, entity in self.cast.mentions(sentence.text)
                ]
                context = _Context(block.text, quotes, mentions, history[-2:], self.cast)
                for statement in context.read(sentence.start, sentence.end):
                    found.append(
                        Statement(
                            statement[0],
                            statement[1],
                            statement[2],
                            statement[3],
                            block.line_at(statement[4]),
                            sentence.text,
                            block.text[statement[5] : statement[6]],
                        )
                    )
                history.append((mentions, sentence.start, sentence.end))
        return found


@dataclass
class _Context:
    text: str
    quotes: tuple[tuple[int, int], ...]
    mentions: list[tuple[int, int, str]]
    history: list[tuple[list[tuple[int, int, str]], int, int]]
    cast: Cast

    def read(
        self, start: int, end: int
    ) -> list[tuple[str, FactKind, str, frozenset[str], int, int, int]]:
        tokens = [
            _Tok.of(start + m.start(), start + m.end(), m.group(0))
            for m in _WORD.finditer(self.text[start:end])
        ]
        self.first = start
        self.sentence_start = start
        out = []
        for i, tok in enumerate(tokens):
            for kind in KINDS:
                if tok.low in kind.cues:
                    hit = self._noun_phrase(tokens, i, kind)
                    if hit:
                        out.append(hit)
            compound = (
                next((k for k in KINDS for s in k.suffixes if tok.low.endswith("-" + s)), None)
                if "-" in tok.low  # only "grey-eyed" and its like can be one
                else None
            )
            if compound is not None and self._plain(tok):
                classes = compound.classes(tok.low.rsplit("-", 1)[0])
                owner = self._subject_of(tokens, i)
                if classes and owner:
                    out.append((owner, compound, tok.low, classes, tok.start, tok.start, tok.end))
            predicate = PREDICATE_WORDS.get(tok.low)
            if predicate is not None and self._plain(tok):
                owner = self._subject_of(tokens, i)
                if owner:
                    classes = predicate.classes(tok.low)
                    out.append((owner, predicate, tok.low, classes, tok.start, tok.start, tok.end))
        return out

    # -- what is said -------------------------------------------------------------------

    def _plain(self, tok: _Tok) -> bool:
        """A word, not part of a name, and not capitalised mid-sentence (a proper noun)."""
        if any(s <= tok.start < e for s, e, _ in self.mentions):
            return False
        return not (tok.text[0].isupper() and tok.start != self.first)

    def _value_words(self, words: Sequence[_Tok], kind: FactKind) -> list[_Tok]:
        values = [w for w in words if self._plain(w) and kind.classes(w.low)]
        # "dark blue eyes" says blue: a shade before another colour only modifies it.
        if len(values) > 1:
            values = [w for w in values if w.low not in _SHADES] or values
        return values

    def _gap_ok(self, a: _Tok, b: _Tok) -> bool:
        return not _CLAUSE_BREAK.search(self.text[a.end : b.start])

    def _noun_phrase(
        self, tokens: list[_Tok], i: int, kind: FactKind
    ) -> tuple[str, FactKind, str, frozenset[str], int, int, int] | None:
        cue = tokens[i]
        before: list[_Tok] = []
        j = i - 1
        while j >= 0 and i - j <= 4 and self._gap_ok(tokens[j], tokens[j + 1]):
            if tokens[j].low in _PHRASE_MODIFIER_BLOCKERS or tokens[j].low.endswith(("'s",)):
                break
            before.insert(0, tokens[j])
            j -= 1
        values = self._value_words(before, kind)
        phrase_start = before[0] if before else cue
        phrase_end = cue
        if not values:
            after = self._predicate_after(tokens, i, kind)
            if not after:
                return None
            values, phrase_end = after, after[-1]
        if any(t.low in _NEGATIONS for t in tokens[max(0, j) : tokens.index(phrase_end) + 1]):
            return None
        owner = self._owner_of(tokens, tokens.index(phrase_start), i)
        if owner is None:
            return None
        classes = frozenset().union(*(kind.classes(v.low) for v in values))
        opener = tokens[tokens.index(phrase_start) - 1] if tokens.index(phrase_start) else None
        quote_from = (
            opener.start
            if opener is not None and self._gap_ok(opener, phrase_start)
            else phrase_start.start
        )
        words = ", ".join(v.low for v in values)
        return (owner, kind, words, classes, values[0].start, quote_from, phrase_end.end)

    def _predicate_after(self, tokens: list[_Tok], i: int, kind: FactKind) -> list[_Tok]:
        """ "eyes were blue", "eyes of the deepest blue": the value after its noun."""
        k = i + 1
        if k < len(tokens) and tokens[k].low in _COPULAS | {"of"}:
            k += 1
            while k < len(tokens) and tokens[k].low in _ADVERBS and k - i <= 4:
                k += 1
            run: list[_Tok] = []
            while k < len(tokens) and self._gap_ok(tokens[k - 1], tokens[k]):
                if kind.classes(tokens[k].low):
                    run.append(tokens[k])
                elif tokens[k].low != "and" or not run:
                    break
                k += 1
            return self._value_words(run, kind)
        return []

    # -- whose it is --------------------------------------------------------------------

    def _mention_at(self, tok: _Tok) -> str | None:
        """The entity named by the name this word is part of ("Hallward’s" in "Basil
        Hallward’s")."""
        for s, e, entity in self.mentions:
            if s <= tok.start < e:
                return entity
        return None

    def _owner_of(self, tokens: list[_Tok], start: int, cue: int) -> str | None:
        spoken = inside(self.quotes, tokens[start].start)
        if start > 0:
            prev = tokens[start - 1]
            if self._gap_ok(prev, tokens[start]):
                if prev.low.endswith("'s"):
                    return self._mention_at(prev)
                if prev.low in _POSSESSIVES and not spoken:
                    return self._resolve(_POSSESSIVES[prev.low], prev.start)
                if prev.low in _SUBJECT_LINKS:
                    return self._clause_subject(tokens, start - 1, spoken)
        after = cue + 1
        if after + 1 < len(tokens) and tokens[after].low == "of":
            return self._mention_at(tokens[after + 1])
        return None

    def _clause_subject(self, tokens: list[_Tok], at: int, spoken: bool) -> str | None:
        j = at - 1
        while j >= 0 and at - j <= 6 and self._gap_ok(tokens[j], tokens[j + 1]):
            entity = self._mention_at(tokens[j])
            if entity:
                return entity
            if tokens[j].low in _SUBJECTS and not spoken:
                return self._resolve(_SUBJECTS[tokens[j].low], tokens[j].start)
            j -= 1
        return None

    def _subject_of(self, tokens: list[_Tok], i: int) -> str | None:
        """Who a predicate word describes: "Basil was tall", "Basil, a tall man",
        "the tall Basil", "he was left-handed"."""
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if nxt is not None and nxt.low in ("of", "for", "with", "by", "to", "in", "on"):
            return None
        if nxt is not None and self._gap_ok(tokens[i], nxt):
            entity = self._mention_at(nxt)
            if entity:
                return entity
        spoken = inside(self.quotes, tokens[i].start)
        linked = False
        j = i - 1
        while j >= 0 and i - j <= 5:
            gap = self.text[tokens[j].end : tokens[j + 1].start]
            if _CLAUSE_BREAK.search(gap):
                return None
            word = tokens[j]
            if word.low in _NEGATIONS:
                return None
            entity = self._mention_at(word)
            if entity:
                # "Basil was left-handed", "Basil, a tall man", "Hallward, left-handed as ever"
                appositive = j == i - 1 and "," in gap
                return entity if linked or appositive else None
            if word.low in _SUBJECTS and not spoken:
                return self._resolve(_SUBJECTS[word.low], word.start) if linked else None
            if word.low in _COPULAS or (
                word.low in ("a", "an") and "," in self.text[tokens[j - 1].end : word.start]
                if j
                else False
            ):
                linked = True
            elif word.low not in _ADVERBS and word.low not in (
                "who",
                "and",
                "young",
                "man",
                "woman",
            ):
                return None
            j -= 1
        return None

    def _resolve(self, gender: Gender | None, before: int) -> str | None:
        """The one person a pronoun can mean: named earlier in this sentence, else in the
        nearest of the two sentences before it in the paragraph; never a name in dialogue,
        and nobody when "him" shows a second man in play ("Henry looked at him. His...")."""
        here = ([m for m in self.mentions if m[1] <= before], self.sentence_start, before)
        for group, start, end in (here, *reversed(self.history)):
            names = {
                entity
                for s, _, entity in group
                if not inside(self.quotes, s) and _compatible(self.cast.genders.get(entity), gender)
            }
            if names:
                other = _OTHER_PERSON.get(gender or "")
                if len(names) > 1 or (other and other.search(self.text, start, end)):
                    return None
                return next(iter(names))
        return None


_OTHER_PERSON = {"he": re.compile(r"\bhim\b"), "they": re.compile(r"\bthem\b")}


def _compatible(known: Gender | None, wanted: Gender | None) -> bool:
    return known is None or wanted is None or known == wanted


#: What a text states about a cast, remembered for the texts read most recently: every run
#: over an unchanged manuscript reads the same scenes, and one run reads a scene twice (the
#: canon checker, then the continuity role). Statements are immutable, so sharing is safe.
_STATEMENTS_KEPT: Final = 256
_statements: OrderedDict[tuple[str, object], tuple[Statement, ...]] = OrderedDict()
_statements_lock = threading.Lock()


def statements_in(text: str, cast: Cast) -> list[Statement]:
    key = (text, cast.key)
    with _statements_lock:
        found = _statements.get(key)
        if found is not None:
            _statements.move_to_end(key)
            return list(found)
    found = tuple(_Reader(read_document(text), cast).statements())
    with _statements_lock:
        _statements[key] = found
        while len(_statements) > _STATEMENTS_KEPT:
            _statements.popitem(last=False)
    return list(found)


@dataclass(frozen=True)
class FactCheck:
    fact: Fact
    kind: FactKind | None
    reason: str

    @property
    def checkable(self) -> bool:
        return self.kind is not None


def plan_checks(facts: Sequence[Fact]) -> list[FactCheck]:
    checks = []
    for fact in facts:
        kind, reason = checkability(fact.attribute, fact.value)
        checks.append(FactCheck(fact, kind, reason))
    return checks


def find_conflicts_in(
    path: str, text: str, checks: Sequence[FactCheck], cast: Cast
) -> tuple[list[Conflict], list[Statement]]:
    """Contradictions of checkable facts, and every statement that agrees with one."""
    wanted = {
        (c.fact.entity, c.kind.attribute): (c, c.kind.classes(c.fact.value))
        for c in checks
        if c.kind is not None
    }
    conflicts: list[Conflict] = []
    agreeing: list[Statement] = []
    seen: set[tuple[str, str, int, str]] = set()
    for statement in statements_in(text, cast):
        entry = wanted.get((statement.entity, statement.kind.attribute))
        if entry is None:
            continue
        check, canon = entry
        if statement.classes & canon:
            agreeing.append(statement)
            continue
        key = (statement.entity, statement.kind.attribute, statement.line, statement.words)
        if key in seen:
            continue
        seen.add(key)
        conflicts.append(
            Conflict(
                statement.entity,
                statement.kind.attribute,
                check.fact.value,
                statement.words,
                path,
                statement.line,
                statement.sentence,
                statement.quote,
            )
        )
    return conflicts, agreeing
