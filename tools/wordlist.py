"""A real English word list (Webster's Second, from the pinned `english-words` package).

Only its lower-case entries are words: its capitalised ones are proper names ("Sybil"), which
a misspelt character name may well coincide with. The package's list takes ~0.6 s to load
and split, in every process that reads a manuscript's names; so the two sets are kept, once
built, as plain files under the user's cache folder (`$XDG_CACHE_HOME/controlroom`, else
`~/.cache/controlroom`), named by the package's version, and read from there (~20 ms). A
cache that cannot be written or read is rebuilt in memory: slower, never wrong.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from collections.abc import Callable
from functools import cache
from pathlib import Path

from controlroom.domain.user_cache import cache_folder, write_whole

#: Fewer words than any of the lists holds: a kept file this short is not one of them.
_FEWEST_WORDS = 1000


def _kept(
    name: str, build: Callable[[], frozenset[str]], source: str = "english-words"
) -> frozenset[str]:
    """`build()`, kept as a file of one word a line under a name the version of its source
    package fixes: a new release of that package builds it afresh."""
    try:
        version = importlib.metadata.version(source)
    except importlib.metadata.PackageNotFoundError:
        return build()
    path = cache_folder("wordlists") / f"{name}-{version}.txt"
    try:
        kept = frozenset(path.read_text(encoding="utf-8").split("\n"))
        if len(kept) >= _FEWEST_WORDS:  # else damaged: built again
            return kept
    except (OSError, ValueError):
        pass
    words = build()
    write_whole(path, lambda out: out.write("\n".join(sorted(words)).encode("utf-8")))
    return words


def _web2() -> set[str]:
    words = importlib.import_module("english_words")
    every: set[str] = words.get_english_words_set(["web2"], lower=False)
    return every


@cache
def common_words() -> frozenset[str]:
    return _kept("common", lambda: frozenset(w for w in _web2() if w.islower()))


def is_common_word(word: str) -> bool:
    """`word` (any case) is an ordinary English word: "june", "misses", "grace"."""
    return word.lower() in common_words()


@cache
def proper_names() -> frozenset[str]:
    """The list's capitalised entries that are not also ordinary words: "Helen", "Estella"
    (and some places and days: "Paris", "Sunday")."""

    def build() -> frozenset[str]:
        ordinary = common_words()
        return frozenset(w for w in _web2() if w[:1].isupper() and w.lower() not in ordinary)

    return _kept("proper", build)


def is_given_name(word: str) -> bool:
    """`word` is a capitalised name in the list and no ordinary word: "Helen", not "Grace"."""
    return word in proper_names()


@cache
def place_names() -> frozenset[str]:
    """Towns of 15,000 people or more, and countries, as GeoNames (geonames.org, CC BY 4.0)
    names them in the data the pinned `geotext` package ships: "Jena", "Paris", "Prussia"
    is not one (a country of old), "Germany" is."""
    return _kept("places", _geonames, source="geotext")


def _geonames() -> frozenset[str]:
    # The data is read where the package keeps it: importing `geotext` builds its own
    # index of every file (a second or so), which is not what is wanted here.
    spec = importlib.util.find_spec("geotext")
    folders = list(spec.submodule_search_locations or []) if spec else []
    if not folders:
        return frozenset()
    data = Path(folders[0]) / "data"
    names: set[str] = set()
    with (data / "cities15000.txt").open(encoding="utf-8") as towns:
        for line in towns:
            columns = line.split("\t", 3)  # id, name, ASCII name, ...
            names.update(columns[1:3])
    with (data / "countryInfo.txt").open(encoding="utf-8-sig") as countries:
        for line in countries:
            if not line.startswith("#"):
                names.add(line.split("\t")[4])
    return frozenset(name for name in names if name)


def is_place_name(word: str) -> bool:
    """`word` names a town or a country: "Jena", "Brussels"."""
    return word in place_names()


#: Endings that make ordinary words of a capitalised one: "Christianity", "Englishism",
#: "Judaize", "Christendom".
_DERIVING = ("ity", "ism", "ize", "dom")


@cache
def _deriving_stems() -> frozenset[str]:
    """The capitalised words the list makes a capitalised word from by one of `_DERIVING`
    ("Christian" of "Christianity", "English" of "Englishism")."""

    def build() -> frozenset[str]:
        return frozenset(
            w[: -len(end)]
            for w in _web2()
            if w[:1].isupper()
            for end in _DERIVING
            if w.endswith(end) and len(w) - len(end) >= 3
        )

    return _kept("proper-stems", build)


def derives_words(word: str) -> bool:
    """`word` is a capitalised word of the language, not a person's name alone: the
    dictionary has words made from it ("Christian": "Christianity")."""
    return word in _deriving_stems()
