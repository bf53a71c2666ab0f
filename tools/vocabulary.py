"""Which canon facts the tools can check, and the words that state their values.

A checkable attribute has a closed vocabulary: each word names one or more value classes
(``hazel`` eyes are brown or green, ``dark`` hair black or brown), so a card may say
``Hair: crisp gold`` and the text ``golden hair`` without a false alarm. Two statements
contradict only when their classes do not meet. Anything else on a card is reported as
not checkable, with the reason.

Negation narrows a value rather than being dropped: "not tall" is middle height or short,
"middle height, neither tall nor short" is middle height alone (`FactKind.classes`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Placement = Literal["modifier", "predicate"]

NEGATIONS = frozenset("not never neither nor no".split())
#: Words that may stand between a negation and what it negates: "not so very tall".
_NEGATION_CARRIERS = frozenset(
    "so very too at all quite particularly especially remarkably grown be been being of a".split()
)


#: Words that qualify a colour after them ("light brown", "dark-blue") and state none.
SHADES = frozenset("light pale dark deep bright".split())


#: The last part of a compound that gives another feature its colour: "black-lashed",
#: "red-rimmed", "dark-browed" eyes state nothing of the eyes' own colour.
_OTHER_FEATURES = frozenset(
    "lashed lidded browed rimmed ringed fringed circled haired skinned faced bearded "
    "cheeked lipped eyed headed complexioned whiskered".split()
)


@dataclass(frozen=True)
class FactKind:
    attribute: str
    #: Nouns the value describes ("eyes"), or () when the value describes the person.
    cues: tuple[str, ...]
    values: dict[str, frozenset[str]]
    #: Compound adjectives: "grey-eyed", "fair-haired".
    suffixes: tuple[str, ...] = ()
    #: "not tall" says something (middle height or short); "not blue" eyes do not.
    negatable: bool = False
    #: Rewrites a card's phrase into the scale's own words before it is read ("above the
    #: middle height" is tall); None: read as written.
    idioms: Callable[[str], str] | None = None
    #: A shade that takes a colour towards its neighbour: "light-brown" hair is brown or,
    #: seen in another light (or on a child), fair; never black.
    blends: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)

    def _blended(self, shade: str, colour: str) -> frozenset[str]:
        return self.values.get(colour, frozenset()) | self.blends.get((shade, colour), frozenset())

    @property
    def all_classes(self) -> frozenset[str]:
        return frozenset().union(*self.values.values())

    def word_classes(self, word: str) -> frozenset[str]:
        """The classes one word (or its hyphen-parts: "coal-black") states; a shade before
        a colour only qualifies it ("light-brown" is brown)."""
        if word in self.values:
            return self.values[word]
        parts = word.split("-")
        own = (*self.suffixes, "headed") if self.attribute == "hair" else self.suffixes
        if len(parts) > 1 and parts[-1] in _OTHER_FEATURES and parts[-1] not in own:
            # "black-lashed eyes": the lashes are black, not the eyes ("grey-headed" on a
            # card is the hair's colour)
            return frozenset()
        return self._words_classes(parts)

    def _words_classes(self, words: list[str]) -> frozenset[str]:
        found: set[str] = set()
        for n, part in enumerate(words):
            if part in SHADES and any(self.values.get(w) for w in words[n + 1 : n + 2]):
                found |= self._blended(part, words[n + 1])
                continue
            tinge = self._tinged(part) if len(words) > 1 else frozenset()
            found |= self.values.get(part, frozenset()) or tinge
        return frozenset(found)

    def _tinged(self, word: str) -> frozenset[str]:
        """ "reddish" in "reddish-brown": a colour's "-ish" before another colour is a tinge
        of it, so the two are red and brown, as "auburn" is. (Alone, "his greenish eyes"
        says too little to set against a card's grey.)"""
        if not word.endswith("ish") or len(word) < 6:
            return frozenset()
        base = word[:-3]
        for stem in (base, base + "e", base[:-1] if base[-1:] == base[-2:-1] else ""):
            if stem in self.values:
                return self.values[stem]
        return frozenset()

    def classes(self, phrase: str) -> frozenset[str]:
        """The value classes a phrase states: every known word in it, less what a negated
        word rules out ("not tall", "neither tall nor short"). Only kinds whose values
        partition a scale (`negatable`) read negation; "not blue" eyes say too little."""
        stated: set[str] = set()
        ruled_out: set[str] = set()
        negated = False
        if self.idioms is not None:
            phrase = self.idioms(phrase.lower())
        words = re.findall(r"[a-z]+(?:-[a-z]+)*", phrase.lower())
        for n, word in enumerate(words):
            if word in NEGATIONS:
                negated = True
                continue
            if word in SHADES and n + 1 < len(words) and self.word_classes(words[n + 1]):
                stated |= self.blends.get((word, words[n + 1]), frozenset())
                continue  # "light brown" is brown (or, for hair, fair)
            classes = self.word_classes(word)
            if classes and negated and n and words[n - 1] == "too":
                # "not too tall" rules out only too much: "tall, yet not too tall" is tall,
                # and alone it says nothing
                pass
            elif classes and negated:
                ruled_out |= classes if self.negatable else frozenset()
            elif classes:
                stated |= classes
            negated = negated and not classes and word in _NEGATION_CARRIERS
        if ruled_out:
            return frozenset((stated or set(self.all_classes)) - ruled_out)
        return frozenset(stated)

    def card_classes(self, value: str) -> frozenset[str]:
        """The classes a card's value states: as `classes`, and a word that leans to a
        colour or a size ("greyish, very clear", "smallish") as that colour or size. Only
        on a card, where the writer chose the word: in the text "his greenish eyes" only
        leans, and says nothing against "light-gray" (an "-ish" word beside a colour, as in
        "reddish blonde", only shades it)."""
        words = re.findall(r"[a-z]+", value.lower())
        leaning = " ".join(
            _leaned_to(word, self.values)
            if n + 1 == len(words) or not self.word_classes(words[n + 1])
            else word
            for n, word in enumerate(words)
        )
        return self.classes(leaning) if leaning != " ".join(words) else self.classes(value)

    def negated(self, classes: frozenset[str]) -> frozenset[str]:
        """What "not <classes>" leaves: the rest of the scale, or nothing for a kind whose
        values do not partition one."""
        return self.all_classes - classes if self.negatable else frozenset()


def _leaned_to(word: str, values: dict[str, frozenset[str]]) -> str:
    """ "greyish" → "grey", "reddish" → "red", "bluish" → "blue", "smallish" → "small";
    any other word as it is."""
    if not word.endswith("ish") or len(word) <= 5:
        return word
    stem = word[:-3]
    return next((base for base in (stem, stem + "e", stem[:-1]) if base in values), word)


def _classes(table: dict[str, str]) -> dict[str, frozenset[str]]:
    return {word: frozenset(classes.split()) for word, classes in table.items()}


EYES = FactKind(
    "eyes",
    ("eye", "eyes"),
    _classes(
        {
            "grey": "grey",
            "gray": "grey",
            "silver": "grey",
            "silvery": "grey",
            "steel": "grey",
            "steely": "grey",
            "slate": "grey",
            "blue": "blue",
            "azure": "blue",
            "sapphire": "blue",
            "cornflower": "blue",
            "turquoise": "blue",  # Howells's "her eyes of turquoise blue"
            "green": "green",
            "emerald": "green",
            "jade": "green",
            "brown": "brown",
            "hazel": "brown green",
            "hazle": "brown green",  # Austen's spelling: "the true hazle eye"
            "amber": "brown",
            "chestnut": "brown",
            "tawny": "brown",
            "black": "black",
            "jet": "black",
            "ebony": "black",
            "dark": "black brown",
            "violet": "violet",
            "purple": "violet",
            "lavender": "violet",
            # "the bluest eyes in the county"
            "bluest": "blue",
            "greyest": "grey",
            "grayest": "grey",
            "blackest": "black",
            "brownest": "brown",
            "greenest": "green",
            "darkest": "black brown",
        }
    ),
    ("eyed",),
)
HAIR = FactKind(
    "hair",
    ("hair", "locks", "curls", "ringlets", "tresses", "braid", "braids", "plait", "plaits"),
    _classes(
        {
            "black": "black",
            "jet": "black",
            "raven": "black",
            "sable": "black",  # Scott's word: "his sable locks"
            "ebony": "black",
            "dark": "black brown",
            "brown": "brown",
            "chestnut": "brown",
            "brunette": "brown",
            "mousy": "brown",
            # "the blackest hair", "the reddest hair in the parish"
            "blackest": "black",
            "darkest": "black brown",
            "reddest": "red",
            "whitest": "grey",
            "mouse": "brown",
            "auburn": "red brown",
            "blond": "blond",
            "blonde": "blond",
            "fair": "blond",
            # "Traddles's light hair"; "light brown" stays brown (a shade before a colour)
            "light": "blond",
            "flaxen": "blond",
            "gold": "blond",
            "golden": "blond",
            "yellow": "blond",
            "honey": "blond",
            "straw": "blond",
            "sandy": "blond red",
            "red": "red",
            "ginger": "red",
            "copper": "red",
            "coppery": "red",
            "titian": "red",
            "carroty": "red",
            "grey": "grey",
            "gray": "grey",
            "silver": "grey",
            "silvery": "grey",
            "white": "grey",
            "hoary": "grey",
            "grizzled": "grey",
        }
    ),
    ("haired",),
    blends={
        ("light", "brown"): frozenset({"blond"}),
        ("pale", "brown"): frozenset({"blond"}),
        ("dark", "brown"): frozenset({"black"}),
    },
)
HANDEDNESS = FactKind(
    "handedness",
    (),
    _classes(
        {
            "left-handed": "left",
            "right-handed": "right",
            "left-hander": "left",
            "right-hander": "right",
            "southpaw": "left",
            "ambidextrous": "left right",
            "left": "left",
            "right": "right",
        }
    ),
    negatable=True,
)
_NORMS = r"(?:the\s+)?(?:middle|common|average|ordinary|usual|medium)\s+(?:height|size|stature)"
#: "a very little above the middle size", "rather below the common height".
_ABOUT_NORM = re.compile(
    r"(?P<near>(?:a\s+)?(?:(?:very|little|trifle|slightly|somewhat|rather|just|a|bit)[\s,]+)+)?"
    r"(?P<side>above|over|more\s+than|beyond|below|under|less\s+than)\s+" + _NORMS
)
_AT_NORM = re.compile(r"\b(?:of\s+)?(?:ordinary|average|common|usual)\s+(?:height|size|stature)\b")
_FEET_WORDS = {
    w: n
    for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}
#: What may come before a height in feet, and which way it leans: "upwards of six feet"
#: is over it; "hardly more than five feet four" is that height, at most (read as written).
_FEET_LEANS = {
    "over": "over", "above": "over", "more than": "over", "upwards of": "over",
    "upward of": "over", "under": "under", "below": "under", "less than": "under",
}  # fmt: skip
_FEET = re.compile(
    # "a little over six feet": how far over is the height's, not "little" said of it
    r"\b(?:(?:a\s+(?:little|trifle|bit|shade)|well|just|a\s+good\s+deal)\s+)?"
    r"(?:(?P<over>over|above|under|below|(?:more|less)\s+than|upwards?\s+of)"
    r"|(?:(?:hardly|scarcely|barely|not|no)\s+(?:more\s+than\s+)?)"
    r"|nearly|near|nigh|almost|about|full|fully|quite|just)?\s*(?P<feet>\w+)\s+"
    r"(?:feet|foot|ft\.?)(?:,?(?:\s+and)?\s+(?P<inches>\w+)(?:\s+inch(?:es)?)?)?"
)


def _number(word: str | None) -> int | None:
    if word is None:
        return None
    return int(word) if word.isdigit() else _FEET_WORDS.get(word)


def _height_idioms(phrase: str) -> str:
    """A card's height in the scale's words: "a very little above the middle size" is
    middle or tall, "below the common height" short, "of ordinary stature" middle, "six
    feet two inches" tall (from six feet; five feet or under is short, in between says
    middle, or short too at five feet five or under), "tallish" tall."""

    def norm(found: re.Match[str]) -> str:
        side = (
            "tall"
            if found.group("side").split()[0] in ("above", "over", "more", "beyond")
            else "short"
        )
        return f"middle {side}" if found.group("near") else side

    def feet(found: re.Match[str]) -> str:
        count, inches = _number(found.group("feet")), _number(found.group("inches")) or 0
        if count is None:
            return found.group(0)
        height = count * 12 + inches
        over = _FEET_LEANS.get(" ".join((found.group("over") or "").split()), "")
        if height >= 72 or (over == "over" and height >= 71):
            return "tall"
        if height <= 60 or (over == "under" and height <= 61):
            return "short"
        return "middle short" if height <= 65 else "middle"

    phrase = _ABOUT_NORM.sub(norm, phrase)
    phrase = _AT_NORM.sub("middle", phrase)
    # spaced: "a fellow of six feet high" is "a fellow of tall", not "a fellow oftall"
    phrase = _FEET.sub(lambda found: f" {feet(found)} ", phrase)
    # "of great stature", "of small stature": the stature's own adjective
    phrase = re.sub(r"\b(?:great|lofty|high)\s+(?:stature|height)\b", "tall", phrase)
    # Scott's "low of stature", "his stature low"
    phrase = re.sub(r"\blow\s+(?:of|in)\s+stature\b|\bstature\s+(?:was\s+)?low\b", "short", phrase)
    return re.sub(r"\b(tall|short)ish\b", r"\1", phrase)


HEIGHT = FactKind(
    "height",
    # "his fine, tall person", "her little figure", "a man of middle stature", "his short,
    # thick body"
    ("figure", "person", "frame", "stature", "body"),
    _classes(
        {
            "tall": "tall",
            "tallest": "tall",
            "towering": "tall",
            "lanky": "tall",
            "lofty": "tall",
            "gigantic": "tall",
            "giant": "tall",
            "giantess": "tall",
            "short": "short",
            "shortest": "short",
            "diminutive": "short",
            "dwarf": "short",
            "small": "short",
            "little": "short",
            "tiny": "short",
            "petite": "short",
            "dwarfish": "short",
            "stunted": "short",
            "undersized": "short",
            "squat": "short",
            "dumpy": "short",
            "stumpy": "short",
            "stubby": "short",
            "statuesque": "tall",
            "commanding": "tall",
            "middle": "middle",
            "medium": "middle",
            "middling": "middle",
            "middle-sized": "middle",
            "average": "middle",
        }
    ),
    negatable=True,
    idioms=_height_idioms,
)
KINDS: tuple[FactKind, ...] = (EYES, HAIR, HANDEDNESS, HEIGHT)

_ATTRIBUTE_NAMES = {
    "eyes": EYES,
    "eye": EYES,
    "eye colour": EYES,
    "eye color": EYES,
    "eye colours": EYES,
    "hair": HAIR,
    "hair colour": HAIR,
    "hair color": HAIR,
    "handedness": HANDEDNESS,
    "handed": HANDEDNESS,
    "dominant hand": HANDEDNESS,
    "hand": HANDEDNESS,
    "height": HEIGHT,
    "stature": HEIGHT,
}
#: Words in the text that state handedness or height (not bare "left"/"right").
PREDICATE_WORDS: dict[str, FactKind] = {
    "left-handed": HANDEDNESS,
    "right-handed": HANDEDNESS,
    "left-hander": HANDEDNESS,
    "right-hander": HANDEDNESS,
    "southpaw": HANDEDNESS,
    "ambidextrous": HANDEDNESS,
    # "Minnie was a brunette", "Lady Constance, a blonde,"; never "fair" or "dark", which
    # are as often the skin
    "brunette": HAIR,
    "blonde": HAIR,
    "tall": HEIGHT,
    "tallest": HEIGHT,
    "shortest": HEIGHT,
    "towering": HEIGHT,
    "lanky": HEIGHT,
    "short": HEIGHT,
    "diminutive": HEIGHT,
    "small": HEIGHT,
    "little": HEIGHT,
    "tiny": HEIGHT,
    "petite": HEIGHT,
    "dwarfish": HEIGHT,
    "undersized": HEIGHT,
    "squat": HEIGHT,
    "dumpy": HEIGHT,
    "statuesque": HEIGHT,
    "middle": HEIGHT,
    "middle-sized": HEIGHT,
    "medium": HEIGHT,
    "middling": HEIGHT,
}
#: Height words that mostly mean something else ("a little while", "small hands", "middle
#: of the room"): read only where they can mean nothing but stature (`facts.py`).
WEAK_HEIGHT_WORDS = frozenset("small little tiny petite middle medium middling".split())
#: What a weak height word must be followed by to be about stature ("of middle height").
STATURE_NOUNS = frozenset("height stature size sized".split())
_DATES = "dates are not checked: the tools do not follow the story's calendar"
_DISTANCES = "distances are not checked: the tools do not measure the story's geography"
_NOT_CHECKABLE_REASONS = {
    "age": "age changes as the story's time passes; not checked",
    "born": _DATES,
    "birthday": _DATES,
    "date": _DATES,
    "dates": _DATES,
    "died": _DATES,
    "founded": _DATES,
    "year": _DATES,
    "distance": _DISTANCES,
    "distances": _DISTANCES,
    "travel time": _DISTANCES,
    "build": "build and figure are not checked (only height is)",
    "figure": "build and figure are not checked (only height is)",
    "pronouns": "used to tell whom 'he' and 'she' mean; not checked against the text",
    "pronoun": "used to tell whom 'he' and 'she' mean; not checked against the text",
    "gender": "used to tell whom 'he' and 'she' mean; not checked against the text",
}


#: Card attributes that keep the book's own bookkeeping, not what a reader is told of a
#: person: left out of a check's "not checked" list a writer must see.
_BOOKKEEPING = frozenset(
    "pronouns pronoun gender sex type kind role roles notes note aliases alias name status "
    "tags tag summary id".split()
) | {"first appears", "first appearance", "also known as"}


def describes_the_person(attribute: str) -> bool:
    """Whether a card attribute says what the text may describe (eyes, age, build, a
    scar), so a check that cannot read it must say so, unlike "role" or "pronouns"."""
    return attribute.strip().lower() not in _BOOKKEEPING


def kind_of(attribute: str) -> FactKind | None:
    return _ATTRIBUTE_NAMES.get(attribute.strip().lower())


def checkability(attribute: str, value: str) -> tuple[FactKind | None, str]:
    """The kind that checks this fact, or None and why it cannot be checked."""
    kind = kind_of(attribute)
    if kind is None:
        reason = _NOT_CHECKABLE_REASONS.get(attribute.strip().lower())
        checkable = ", ".join(sorted({k.attribute for k in KINDS}))
        return None, reason or f"no check for '{attribute}' (checkable: {checkable})"
    classes = kind.card_classes(value)
    if not classes:
        # the words a card would use: no compounds, no superlatives ("bluest")
        card_words = (w for w in kind.values if "-" not in w and not w.endswith("est"))
        known = ", ".join(sorted(card_words)[:12])
        return None, f"value '{value}' is not in the {kind.attribute} vocabulary ({known}, ...)"
    if kind.negatable and {"short", "tall"} <= classes:
        # "small for her age at ten; tall at seventeen": two heights over the story's time,
        # so any height agrees with the card; said, not passed
        return None, f"value '{value}' gives two heights (short and tall); not checked"
    return kind, "checked"
