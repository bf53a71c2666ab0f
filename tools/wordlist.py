"""A real English word list (Webster's Second, from the pinned `english-words` package).

Only its lower-case entries are words: its capitalised ones are proper names ("Sybil"), which
a misspelt character name may well coincide with. Loaded once, on first use (~0.2 s).
"""

from __future__ import annotations

import importlib
from functools import cache


@cache
def common_words() -> frozenset[str]:
    words = importlib.import_module("english_words")
    every: set[str] = words.get_english_words_set(["web2"], lower=False)
    return frozenset(w for w in every if w.islower())


def is_common_word(word: str) -> bool:
    """`word` (any case) is an ordinary English word: "june", "misses", "grace"."""
    return word.lower() in common_words()


@cache
def proper_names() -> frozenset[str]:
    """The list's capitalised entries that are not also ordinary words: "Helen", "Estella"
    (and some places and days: "Paris", "Sunday")."""
    words = importlib.import_module("english_words")
    every: set[str] = words.get_english_words_set(["web2"], lower=False)
    ordinary = common_words()
    return frozenset(w for w in every if w[:1].isupper() and w.lower() not in ordinary)


def is_given_name(word: str) -> bool:
    """`word` is a capitalised name in the list and no ordinary word: "Helen", not "Grace"."""
    return word in proper_names()
