"""Which canon facts the tools can check, and the words that state their values.

A checkable attribute has a closed vocabulary: each word names one or more value classes
(``hazel`` eyes are brown or green, ``dark`` hair black or brown), so a card may say
``Hair: crisp gold`` and the text ``golden hair`` without a false alarm. Two statements
contradict only when their classes do not meet. Anything else on a card is reported as
not checkable, with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Placement = Literal["modifier", "predicate"]


@dataclass(frozen=True)
class FactKind:
    attribute: str
    #: Nouns the value describes ("eyes"), or () when the value describes the person.
    cues: tuple[str, ...]
    values: dict[str, frozenset[str]]
    #: Compound adjectives: "grey-eyed", "fair-haired".
    suffixes: tuple[str, ...] = ()

    def classes(self, phrase: str) -> frozenset[str]:
        """The value classes a phrase states: every known word or hyphen-part in it."""
        found: set[str] = set()
        for word in re.findall(r"[a-z]+(?:-[a-z]+)*", phrase.lower()):
            if word in self.values:
                found |= self.values[word]
                continue
            for part in word.split("-"):
                found |= self.values.get(part, frozenset())
        return frozenset(found)


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
            "green": "green",
            "emerald": "green",
            "jade": "green",
            "brown": "brown",
            "hazel": "brown green",
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
            "ebony": "black",
            "dark": "black brown",
            "brown": "brown",
            "chestnut": "brown",
            "brunette": "brown",
            "mousy": "brown",
            "mouse": "brown",
            "auburn": "red brown",
            "blond": "blond",
            "blonde": "blond",
            "fair": "blond",
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
)
HANDEDNESS = FactKind(
    "handedness",
    (),
    _classes(
        {
            "left-handed": "left",
            "right-handed": "right",
            "ambidextrous": "left right",
            "left": "left",
            "right": "right",
        }
    ),
)
HEIGHT = FactKind(
    "height",
    (),
    _classes(
        {
            "tall": "tall",
            "towering": "tall",
            "lanky": "tall",
            "short": "short",
            "diminutive": "short",
        }
    ),
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
    "ambidextrous": HANDEDNESS,
    "tall": HEIGHT,
    "towering": HEIGHT,
    "lanky": HEIGHT,
    "short": HEIGHT,
    "diminutive": HEIGHT,
}
_NOT_CHECKABLE_REASONS = {
    "age": "age changes as the story's time passes; not checked",
    "born": "dates are not checked",
    "birthday": "dates are not checked",
    "pronouns": "used to tell whom 'he' and 'she' mean; not checked against the text",
    "pronoun": "used to tell whom 'he' and 'she' mean; not checked against the text",
    "gender": "used to tell whom 'he' and 'she' mean; not checked against the text",
}


def kind_of(attribute: str) -> FactKind | None:
    return _ATTRIBUTE_NAMES.get(attribute.strip().lower())


def checkability(attribute: str, value: str) -> tuple[FactKind | None, str]:
    """The kind that checks this fact, or None and why it cannot be checked."""
    kind = kind_of(attribute)
    if kind is None:
        reason = _NOT_CHECKABLE_REASONS.get(attribute.strip().lower())
        checkable = ", ".join(sorted({k.attribute for k in KINDS}))
        return None, reason or f"no check for '{attribute}' (checkable: {checkable})"
    if not kind.classes(value):
        known = ", ".join(sorted(w for w in kind.values if "-" not in w)[:12])
        return None, f"value '{value}' is not in the {kind.attribute} vocabulary ({known}, ...)"
    return kind, "checked"
