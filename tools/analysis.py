"""Plain-text analysis shared by the phase A tools and the offline model.

Everything here is deterministic and works on markdown prose: headings, sentences,
words, canon cards (``- **Attribute:** value`` lines) and the contradictions between them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from controlroom.tools.canon import CanonCard, Fact, cast_from_names, facts_of, parse_card
from controlroom.tools.facts import Conflict, find_conflicts_in, plan_checks
from controlroom.tools.text import read_document

__all__ = ["CanonCard", "Conflict", "Fact", "facts_of", "find_conflicts", "parse_card"]

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
_WORD = re.compile(r"[A-Za-z][A-Za-z'’\-]*")
_NUMBER = re.compile(r"\b(\d+)\b")


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def terms(text: str) -> list[str]:
    """Lower-cased content words (no stopwords), in order."""
    return [w.lower() for w in words(text) if w.lower() not in STOPWORDS and len(w) > 2]


def title_of(text: str) -> str | None:
    return read_document(text).title


def numbers_in(text: str) -> list[int]:
    return [int(n) for n in _NUMBER.findall(text)]


def sentences(text: str) -> tuple[tuple[int, str], ...]:
    """(line number, sentence) pairs: real sentences of the unwrapped paragraphs."""
    return tuple((s.line, s.text) for s in read_document(text).sentences)


def paragraphs(text: str) -> list[str]:
    return [b.text for b in read_document(text).prose]


_FACT_LINE = re.compile(r"^\s*[-*]?\s*(.+?):\s*([a-z][a-z /]*?)\s*=\s*(.+?)\s*$")


def parse_fact_lines(text: str) -> list[Fact]:
    """Read back facts written by `Fact.line` (how canon reaches an agent's prompt)."""
    facts = []
    for line in text.splitlines():
        match = _FACT_LINE.match(line)
        if match:
            facts.append(Fact(match.group(1).strip(), match.group(2), match.group(3), "prompt"))
    return facts


def find_conflicts(
    path: str, text: str, facts: Sequence[Fact], entity_names: Mapping[str, Sequence[str]]
) -> list[Conflict]:
    """Sentences that give a canon entity an attribute value its facts rule out."""
    cast = cast_from_names({e: list(ns) for e, ns in entity_names.items()})
    conflicts, _ = find_conflicts_in(path, text, plan_checks(facts), cast)
    return conflicts


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


_VOWEL_GROUP = re.compile(r"[aeiouy]+")


@lru_cache(maxsize=1 << 16)
def syllables(word: str) -> int:
    # Remembered per word: a text repeats its words, and the reading ease of a chapter
    # asks for every one of them.
    lower = word.lower()
    groups = len(_VOWEL_GROUP.findall(lower))
    count = groups - (1 if lower.endswith("e") and groups > 1 else 0)
    return max(1, count)


def flesch_reading_ease(text: str) -> float:
    ws = words(text)
    ss = sentences(text)
    if not ws or not ss:
        return 0.0
    syl = sum(syllables(w) for w in ws)
    return round(206.835 - 1.015 * (len(ws) / len(ss)) - 84.6 * (syl / len(ws)), 1)
