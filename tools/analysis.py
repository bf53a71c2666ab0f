"""Plain-text analysis shared by the phase A tools and the offline model.

Everything here is deterministic and works on markdown prose: headings, sentences,
words, canon cards (``- **Attribute:** value`` lines) and the contradictions between them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "into",
        "onto",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "he",
        "she",
        "they",
        "we",
        "you",
        "i",
        "me",
        "my",
        "our",
        "your",
        "his",
        "her",
        "their",
        "them",
        "us",
        "do",
        "does",
        "did",
        "not",
        "no",
        "so",
        "than",
        "then",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "when",
        "where",
        "why",
        "all",
        "any",
        "each",
        "some",
        "more",
        "most",
        "such",
        "only",
        "own",
        "same",
        "too",
        "very",
        "can",
        "will",
        "just",
        "should",
        "now",
        "about",
        "against",
        "between",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
        "up",
        "down",
        "out",
        "off",
        "over",
        "under",
        "again",
        "further",
        "once",
        "scene",
        "draft",
        "write",
        "check",
        "review",
        "please",
        "new",
    ]
)

COLORS = frozenset(
    [
        "black",
        "white",
        "grey",
        "gray",
        "blue",
        "green",
        "brown",
        "hazel",
        "amber",
        "red",
        "auburn",
        "blond",
        "blonde",
        "golden",
        "silver",
        "violet",
        "purple",
        "yellow",
        "copper",
        "chestnut",
        "dark",
        "pale",
    ]
)
#: Words that can describe the same attribute in mutually exclusive ways.
EXCLUSIVE_VALUES: tuple[frozenset[str], ...] = (
    COLORS - {"dark", "pale"},
    frozenset({"left-handed", "right-handed"}),
    frozenset({"tall", "short"}),
)
ATTRIBUTE_CUES: dict[str, tuple[str, ...]] = {
    "eyes": ("eye", "eyes", "gaze"),
    "hair": ("hair", "braid", "curls", "locks"),
    "handedness": ("hand", "handed", "left-handed", "right-handed"),
    "height": ("tall", "short", "height", "stood"),
}

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)]*\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’\-]*")
_CARD_LINE = re.compile(
    r"^\s*(?:[-*+]\s*)?\*{0,2}([A-Za-z][A-Za-z /]*?)\*{0,2}\s*:\s*\*{0,2}\s*(.+?)\s*$"
)
_NUMBER = re.compile(r"\b(\d+)\b")


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def terms(text: str) -> list[str]:
    """Lower-cased content words (no stopwords), in order."""
    return [w.lower() for w in words(text) if w.lower() not in STOPWORDS and len(w) > 2]


def title_of(text: str) -> str | None:
    for line in text.splitlines():
        match = _HEADING.match(line)
        if match:
            return match.group(2).strip()
    return None


def numbers_in(text: str) -> list[int]:
    return [int(n) for n in _NUMBER.findall(text)]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of every non-heading, non-empty line."""
    return [
        (i, line.strip())
        for i, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not _HEADING.match(line)
    ]


@lru_cache(maxsize=1024)
def sentences(text: str) -> tuple[tuple[int, str], ...]:
    """(line number, sentence) pairs from the prose of a markdown text (cached: tools and
    agents split the same scene texts many times over a run)."""
    found: list[tuple[int, str]] = []
    for number, line in prose_lines(text):
        for part in _SENTENCE_END.split(line):
            if part.strip():
                found.append((number, part.strip()))
    return tuple(found)


def paragraphs(text: str) -> list[str]:
    blocks = re.split(r"\n\s*\n", text)
    return [b.strip() for b in blocks if b.strip() and not _HEADING.match(b.strip())]


@dataclass(frozen=True)
class CanonCard:
    path: str
    name: str
    kind: str
    aliases: tuple[str, ...]
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        first = self.name.split()[0] if self.name.split() else self.name
        return tuple(dict.fromkeys((self.name, first, *self.aliases)))


def parse_card(path: str, text: str) -> CanonCard:
    name = title_of(text) or path.rsplit("/", 1)[-1].removesuffix(".md")
    attributes: dict[str, str] = {}
    for _, line in prose_lines(text):
        match = _CARD_LINE.match(line)
        if match:
            attributes[match.group(1).strip().lower()] = match.group(2).strip().rstrip(".")
    aliases = tuple(a.strip() for a in attributes.pop("aliases", "").split(",") if a.strip())
    kind = attributes.pop("type", "entry").lower()
    return CanonCard(path=path, name=name, kind=kind, aliases=aliases, attributes=attributes)


@dataclass(frozen=True)
class Fact:
    entity: str
    attribute: str
    value: str
    source: str

    def line(self) -> str:
        return f"{self.entity}: {self.attribute} = {self.value}"


def facts_of(cards: Iterable[CanonCard]) -> list[Fact]:
    return [
        Fact(card.name, attribute, value, card.path)
        for card in cards
        for attribute, value in card.attributes.items()
    ]


_FACT_LINE = re.compile(r"^\s*[-*]?\s*(.+?):\s*([a-z][a-z /]*?)\s*=\s*(.+?)\s*$")


def parse_fact_lines(text: str) -> list[Fact]:
    """Read back facts written by `Fact.line` (how canon reaches an agent's prompt)."""
    facts = []
    for line in text.splitlines():
        match = _FACT_LINE.match(line)
        if match:
            facts.append(Fact(match.group(1).strip(), match.group(2), match.group(3), "prompt"))
    return facts


def _value_words(value: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z\-]+", value)}


def _class_of(value: str) -> frozenset[str] | None:
    found = _value_words(value)
    for exclusive in EXCLUSIVE_VALUES:
        if found & exclusive:
            return exclusive
    return None


@dataclass(frozen=True)
class Conflict:
    entity: str
    attribute: str
    canon_value: str
    found: str
    path: str
    line: int
    sentence: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "entity": self.entity,
            "attribute": self.attribute,
            "canon_value": self.canon_value,
            "found": self.found,
            "path": self.path,
            "line": self.line,
            "sentence": self.sentence,
        }

    def describe(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.entity}'s {self.attribute} is "
            f"'{self.found}' but canon says '{self.canon_value}'"
        )


def find_conflicts(
    path: str, text: str, facts: Sequence[Fact], entity_names: Mapping[str, Sequence[str]]
) -> list[Conflict]:
    """Sentences that give a canon entity an attribute value its card rules out.

    A sentence counts for an entity only if that entity is the nearest named entity
    before the attribute cue, so "Kael looked into Mira's green eyes" speaks of Mira;
    a sentence naming nobody speaks of the last entity named ("His green eyes...").
    """
    checkable = [
        (fact, exclusive, _value_words(fact.value), _cue_pattern(fact.attribute))
        for fact in facts
        if (exclusive := _class_of(fact.value)) is not None
    ]
    names = _names_pattern(tuple((e, tuple(ns)) for e, ns in entity_names.items()))
    owner = {name: entity for entity, ns in entity_names.items() for name in ns}
    conflicts: list[Conflict] = []
    previous_entity: str | None = None
    for number, sentence in sentences(text):
        mentions = (
            [(m.start(), owner[m.group(0)]) for m in names.finditer(sentence)] if names else []
        )
        lowered = sentence.lower()
        for fact, exclusive, canon_words, cue in checkable:
            found_cue = cue.search(lowered)
            if found_cue is None:
                continue
            cue_at = found_cue.start()
            before = [entity for start, entity in mentions if start <= cue_at]
            subject = before[-1] if before else (mentions[0][1] if mentions else previous_entity)
            if subject != fact.entity:
                continue
            window = lowered[max(0, cue_at - 40) : cue_at + 40]
            said = {w for w in _VALUE_WORD.findall(window) if w in exclusive}
            wrong = sorted(said - canon_words)
            if wrong and not (said & canon_words):
                conflicts.append(
                    Conflict(
                        fact.entity,
                        fact.attribute,
                        fact.value,
                        ", ".join(wrong),
                        path,
                        number,
                        sentence,
                    )
                )
        if mentions:
            previous_entity = mentions[-1][1]
    return conflicts


_VALUE_WORD = re.compile(r"[a-z\-]+")


@lru_cache(maxsize=256)
def _cue_pattern(attribute: str) -> re.Pattern[str]:
    cues = ATTRIBUTE_CUES.get(attribute, (attribute,))
    return re.compile(r"\b(?:" + "|".join(re.escape(c) for c in cues) + r")\b")


@lru_cache(maxsize=256)
def _names_pattern(entities: tuple[tuple[str, tuple[str, ...]], ...]) -> re.Pattern[str] | None:
    names = sorted({n for _, ns in entities for n in ns}, key=len, reverse=True)
    if not names:
        return None
    return re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b")


def edit_distance_at_most_one(a: str, b: str) -> bool:
    if a == b:
        return False
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diffs = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diffs) == 1:
            return True
        return (
            len(diffs) == 2
            and diffs[1] == diffs[0] + 1
            and a[diffs[0]] == b[diffs[1]]
            and a[diffs[1]] == b[diffs[0]]
        )
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


_NOT_NAMES = frozenset(
    """whoever whatever someone somewhere something nobody nothing everyone every still only
    later inside outside above below behind then when while""".split()
)

STAKE_CUES = frozenset(
    [
        "must",
        "unless",
        "or-else",
        "before",
        "promise",
        "promised",
        "swore",
        "secret",
        "never",
        "last",
        "lose",
        "lost",
        "die",
        "dead",
        "death",
        "blood",
        "threat",
        "warned",
        "warning",
        "deadline",
        "fail",
        "failed",
        "risk",
        "danger",
        "hunt",
        "hidden",
    ]
)


def stake_cues_in(sentence: str) -> list[str]:
    lowered = {w.lower() for w in words(sentence)}
    return sorted(lowered & STAKE_CUES)


def name_set(texts: Iterable[str]) -> set[str]:
    """Names of people, places, things: words capitalised mid-sentence somewhere, or
    opening two or more sentences while never written in lower case."""
    names: set[str] = set()
    openers: dict[str, int] = {}
    lowercase: set[str] = set()
    for text in texts:
        for _, sentence in sentences(text):
            tokens = [t.strip("'’") for t in words(sentence)]
            for position, token in enumerate(tokens):
                if not token[:1].isupper():
                    lowercase.add(token)
                elif token.lower() in STOPWORDS or token.lower() in _NOT_NAMES or len(token) < 3:
                    continue
                elif position == 0:
                    openers[token] = openers.get(token, 0) + 1
                else:
                    names.add(token)
    names |= {t for t, n in openers.items() if n >= 2 and t.lower() not in lowercase}
    return names


def proper_nouns(text: str, names: set[str] | None = None) -> list[str]:
    """Every occurrence of a name, wherever it stands (a name opening a sentence is still
    a name); names come from `name_set` of this text unless given."""
    known = name_set([text]) if names is None else names
    return [t.strip("'’") for t in words(text) if t.strip("'’") in known]


def dialogue_ratio(text: str) -> float:
    quoted = sum(len(q) for q in re.findall(r"[\"“]([^\"”]*)[\"”]", text))
    total = len(text) or 1
    return round(quoted / total, 3)


def syllables(word: str) -> int:
    groups = re.findall(r"[aeiouy]+", word.lower())
    count = len(groups) - (1 if word.lower().endswith("e") and len(groups) > 1 else 0)
    return max(1, count)


def flesch_reading_ease(text: str) -> float:
    ws = words(text)
    ss = sentences(text)
    if not ws or not ss:
        return 0.0
    syl = sum(syllables(w) for w in ws)
    return round(206.835 - 1.015 * (len(ws) / len(ss)) - 84.6 * (syl / len(ws)), 1)
