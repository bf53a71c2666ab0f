"""People the manuscript names who have no canon card: what a canon update proposes to add.

A person, not a place: a capitalised name that follows a title ("Miss Gryce", "Mr. Lloyd")
or tags a speech ("said Leah", "Bobby cried"), named at least `MIN_MENTIONS` times in all,
and no part of a carded name. Ordinary words are never names ("Missis", "Papa" are titles
of address; a word the text also writes in lower case is a word). A saint's title names a
place or a church more often than a person ("Saint Antoine", "St. Paul's"), and a word the
text writes after "in" or "the", or before "Island", "Street", "Inn" and their like, is a
place or a language ("in Paris", "in French", "Prince Edward Island"): neither is anyone.
"""

from __future__ import annotations

import re
from collections import Counter

from controlroom.tools.canon import HONORIFICS, SAINT_TITLES, TITLED_NAME, Cast, names_a_thing
from controlroom.tools.stopping import checkpoint
from controlroom.tools.text import inside, quoted_spans, read_document
from controlroom.tools.voices import SPEECH_VERBS

#: A newcomer named fewer times than this is a walk-on, not a card.
MIN_MENTIONS = 3
_NAME = r"[A-Z][a-z]+(?:[’'][a-z]+)?"
_WORDS = re.compile(r"[A-Za-z]+(?:[’'][A-Za-z]+)?")
_ADDRESS = frozenset("missis mama mamma papa sir madam ma'am master mistress".split())
#: "in Paris", "in French", "the French", not "in Jane's room".
_AFTER_IN_OR_ARTICLE = re.compile(r"\b(?:[Ii]n|a|an|the)\s+(" + _NAME + r")\b(?![’'])")
#: "Prince Edward Island", "Barnard's Inn", "Baker Street": a place named for someone.
_PLACE_AFTER = re.compile(
    r"\b([A-Z][a-z]+)(?:[’']s)?\s+(?:Island|Street|Square|Road|Lane|Hall|Park|Place|Court|"
    r"Inn|Abbey|Church|Chapel|College|House|Hill|Row|Gardens|Terrace|Bridge|River|Lake|Bay|"
    r"Town|County|Castle|Manor|Farm|Lodge|Wood|Common|Green|Station|Hotel)\b"
)
#: A first name and the surname after it, across a line break: "Mr. Peter\nHawkins".
_GIVEN_AND_SURNAME = re.compile(r"\b(" + _NAME + r")\s+(" + _NAME + r")\b")


def uncarded_people(
    texts: dict[str, str], cast: Cast, intended: list[str] | None = None
) -> list[tuple[str, int, str]]:
    """(name as first titled or tagged, mentions, first `path:line`) of each person without
    a card, most mentioned first; `intended` spellings (a carded person's nickname or a
    character's own misspelling, `workspace.json` `ignore_names`) are nobody new."""
    carded = cast.name_tokens() | {w for n in cast.owner for w in n.split()} | set(intended or [])
    lowercase: set[str] = set()
    #: Places and languages: after "in" or an article, or before "Island", "Inn", ...
    placed: set[str] = set()
    people: dict[str, str] = {}
    first: dict[str, str] = {}
    counts: Counter[str] = Counter()
    #: The capitalised word after each name: "Peter" is followed by "Hawkins".
    surnames: dict[str, set[str]] = {}
    for path, text in texts.items():
        checkpoint()  # many long files: stoppable between them (tools/stopping.py)
        doc = read_document(text)
        for block in doc.prose:
            lowercase.update(w for w in _WORDS.findall(block.text) if w.islower())
            placed.update(_AFTER_IN_OR_ARTICLE.findall(block.text))
            placed.update(_PLACE_AFTER.findall(block.text))
            for name, label, at in _people_in(block.text):
                people.setdefault(name, label)
                first.setdefault(name, f"{path}:{block.line_at(at)}")
            for given, surname in _GIVEN_AND_SURNAME.findall(block.text):
                surnames.setdefault(given, set()).add(surname)
            for word in re.findall(r"\b" + _NAME + r"\b", block.text):
                counts[word.replace("’", "'").split("'")[0]] += 1
    newcomers = {
        name: label
        for name, label in people.items()
        if name not in carded
        and name not in placed
        and name.lower() not in lowercase
        and name.lower() not in HONORIFICS
        and name.lower() not in _ADDRESS
        and counts[name] >= MIN_MENTIONS
    }
    uncarded = [
        (label, counts[name], first[name])
        for name, label in newcomers.items()
        # "Mr. Peter" of "Mr. Peter Hawkins" is "Mr. Hawkins", proposed already
        if not surnames.get(name, set()) & (newcomers.keys() - {name})
    ]
    return sorted(uncarded, key=lambda row: (-row[1], row[0]))


def _people_in(text: str) -> list[tuple[str, str, int]]:
    """(name, how it is written, offset) of each titled name and each speech-tag name."""
    found = [
        (m.group("name"), m.group(0), m.start())
        for m in TITLED_NAME.finditer(text)
        if m.group("title").lower() not in SAINT_TITLES and not names_a_thing(text, m)
    ]
    quotes = quoted_spans(text)
    words = [
        (m.start(), m.group(0)) for m in _WORDS.finditer(text) if not inside(quotes, m.start())
    ]
    for i, (_, word) in enumerate(words):
        if word.lower() not in SPEECH_VERBS or (i and words[i - 1][1] in ("the", "aforesaid")):
            continue  # "the said French Lewis": "said" is no speech
        for j in (i + 1, i - 1):
            if 0 <= j < len(words) and re.fullmatch(_NAME, words[j][1]) and j != 0:
                start, name = words[j]
                (a, first_word), (b, _) = sorted((words[i], words[j]))
                if text[a + len(first_word) : b].strip(" \t\r\n,"):
                    continue  # a quote or a stop between: "Saint Antoine. 'Go,' said"
                before = text[:start].rstrip()
                if before and before[-1] in ".!?" and j < i:
                    continue  # a sentence's first word is capitalised anyway
                found.append((name, name, start))
    return found
