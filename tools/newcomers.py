"""People the manuscript names who have no canon card: what a canon update proposes to add.

A person, not a place: a capitalised name that follows a title ("Miss Gryce", "Mr. Lloyd")
or tags a speech ("said Leah", "Bobby cried"), named at least `MIN_MENTIONS` times in all,
and no part of a carded name. Ordinary words are never names ("Missis", "Papa" are titles
of address; a word the text also writes in lower case is a word).
"""

from __future__ import annotations

import re
from collections import Counter

from controlroom.tools.canon import HONORIFICS, TITLED_NAME, Cast
from controlroom.tools.stopping import checkpoint
from controlroom.tools.text import inside, quoted_spans, read_document
from controlroom.tools.voices import SPEECH_VERBS

#: A newcomer named fewer times than this is a walk-on, not a card.
MIN_MENTIONS = 3
_NAME = r"[A-Z][a-z]+(?:[’'][a-z]+)?"
_WORDS = re.compile(r"[A-Za-z]+(?:[’'][A-Za-z]+)?")
_ADDRESS = frozenset("missis mama mamma papa sir madam ma'am master mistress".split())


def uncarded_people(
    texts: dict[str, str], cast: Cast, intended: list[str] | None = None
) -> list[tuple[str, int, str]]:
    """(name as first titled or tagged, mentions, first `path:line`) of each person without
    a card, most mentioned first; `intended` spellings (a carded person's nickname or a
    character's own misspelling, `workspace.json` `ignore_names`) are nobody new."""
    carded = cast.name_tokens() | {w for n in cast.owner for w in n.split()} | set(intended or [])
    lowercase: set[str] = set()
    people: dict[str, str] = {}
    first: dict[str, str] = {}
    counts: Counter[str] = Counter()
    for path, text in texts.items():
        checkpoint()  # many long files: stoppable between them (tools/stopping.py)
        doc = read_document(text)
        for block in doc.prose:
            lowercase.update(w for w in _WORDS.findall(block.text) if w.islower())
            for name, label, at in _people_in(block.text):
                people.setdefault(name, label)
                first.setdefault(name, f"{path}:{block.line_at(at)}")
            for word in re.findall(r"\b" + _NAME + r"\b", block.text):
                counts[word.replace("’", "'").split("'")[0]] += 1
    uncarded = [
        (label, counts[name], first[name])
        for name, label in people.items()
        if name not in carded
        and name.lower() not in lowercase
        and name.lower() not in HONORIFICS
        and name.lower() not in _ADDRESS
        and counts[name] >= MIN_MENTIONS
    ]
    return sorted(uncarded, key=lambda row: (-row[1], row[0]))


def _people_in(text: str) -> list[tuple[str, str, int]]:
    """(name, how it is written, offset) of each titled name and each speech-tag name."""
    found = [(m.group("name"), m.group(0), m.start()) for m in TITLED_NAME.finditer(text)]
    quotes = quoted_spans(text)
    words = [
        (m.start(), m.group(0)) for m in _WORDS.finditer(text) if not inside(quotes, m.start())
    ]
    for i, (_, word) in enumerate(words):
        if word.lower() not in SPEECH_VERBS:
            continue
        for j in (i + 1, i - 1):
            if 0 <= j < len(words) and re.fullmatch(_NAME, words[j][1]) and j != 0:
                start, name = words[j]
                before = text[:start].rstrip()
                if before and before[-1] in ".!?" and j < i:
                    continue  # a sentence's first word is capitalised anyway
                found.append((name, name, start))
    return found
