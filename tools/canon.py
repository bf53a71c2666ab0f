"""Canon cards: who and what the story holds fixed, the names they go by, and their facts.

A card is a markdown file: its first heading is the name, then one `Attribute: value` per
line (list items and `**bold**` labels are fine), or the same in front matter. `Aliases`
lists other names, `Type` the kind of entry, `Pronouns` (or `Gender`) how the text refers
to a character. A fact keeps the card's own words; `vocabulary.py` decides whether the
tools can check it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cached_property
from typing import Literal

from controlroom.tools.text import Block, read_document
from controlroom.tools.vocabulary import KINDS
from controlroom.tools.wordlist import is_common_word, is_given_name

Gender = Literal["he", "she", "they"]

_ATTRIBUTE = re.compile(r"^\s*\*{0,2}([A-Za-z][A-Za-z /'’\-]*?)\*{0,2}\s*:\s*\*{0,2}\s*(.+?)\s*$")
HONORIFICS: dict[str, Gender | None] = {
    "mr": "he",
    "mister": "he",
    "sir": "he",
    "lord": "he",
    "king": "he",
    "prince": "he",
    "duke": "he",
    "earl": "he",
    "baron": "he",
    "count": "he",
    "father": "he",
    "brother": "he",
    "uncle": "he",
    "master": "he",
    # the dialect's "Master": "Mas’r George" is George, not every "Mas’r" in the book
    "mas'r": "he",
    "mas’r": "he",
    "massa": "he",
    "marse": "he",
    "monsieur": "he",
    "signor": "he",
    "herr": "he",
    "reverend": "he",
    "rev": "he",
    "mrs": "she",
    "miss": "she",
    "ms": "she",
    "lady": "she",
    "dame": "she",
    "queen": "she",
    "princess": "she",
    "duchess": "she",
    "countess": "she",
    "baroness": "she",
    "mother": "she",
    "sister": "she",
    "aunt": "she",
    "madame": "she",
    "mme": "she",
    "mlle": "she",
    "mademoiselle": "she",
    "signora": "she",
    "frau": "she",
    "cousin": None,
    "dr": None,
    "doctor": None,
    "professor": None,
    "prof": None,
    "captain": None,
    "capt": None,
    "colonel": None,
    "col": None,
    "general": None,
    "major": None,
    "lieutenant": None,
    "sergeant": None,
    "st": None,
    "saint": None,
    "the": None,
}
#: Given names that are also everyday words: at a sentence's start they are not a mention.
_EVERYDAY = frozenset(
    "will hope grace rose frank mark bill pat faith joy may june april august summer art dawn "
    "guy jack ray rich sly sterling victor earnest constance prudence patience honor".split()
)
_PRONOUN_ATTRIBUTES = ("pronouns", "pronoun", "gender", "sex")


@dataclass(frozen=True)
class CanonCard:
    path: str
    name: str
    kind: str
    aliases: tuple[str, ...]
    attributes: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        """The card's own names: its title, its first word, and its aliases."""
        first = self.name.split()[0] if self.name.split() else self.name
        return tuple(dict.fromkeys((self.name, first, *self.aliases)))

    @property
    def gender(self) -> Gender | None:
        for key in _PRONOUN_ATTRIBUTES:
            value = self.attributes.get(key, "").lower()
            if re.search(r"\b(she|her|female|woman|girl|f)\b", value):
                return "she"
            if re.search(r"\b(he|him|his|male|man|boy|m)\b", value):
                return "he"
            if re.search(r"\b(they|them|nonbinary|non-binary)\b", value):
                return "they"
        for name in (self.name, *self.aliases):
            title = name.split()[0].lower().rstrip(".") if name.split() else ""
            gender = HONORIFICS.get(title)
            if gender:
                return gender
        return None


def _kind_from_path(path: str) -> str:
    lowered = path.lower()
    for word, kind in (
        ("character", "character"),
        ("people", "character"),
        ("cast", "character"),
        ("char-", "character"),
        ("location", "location"),
        ("place", "location"),
        ("loc-", "location"),
        ("item", "item"),
        ("object", "item"),
    ):
        if word in lowered:
            return kind
    return "entry"


def parse_card(path: str, text: str) -> CanonCard:
    doc = read_document(text)
    name = doc.title or path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    attributes: dict[str, str] = {}
    lines: dict[str, int] = {}
    for key, value in doc.front_matter.items():
        if key in ("title", "name"):
            name = value or name
        else:
            attributes[key] = value.strip("[]")
            lines[key] = 1
    section: Block | None = None
    for block in doc.blocks:
        if block.kind == "heading":
            section = block if block.level >= 2 else None
            continue
        starts = (0, *block.breaks)
        ends = (*block.breaks, len(block.text))
        rows = [block.text[start:end].strip() for start, end in zip(starts, ends, strict=True)]
        found = {**_table_attributes(rows), **_line_attributes(rows)}
        if section is not None and (not found or _a_value_with_a_colon(section.text, found)):
            found = _section_attribute(section.text, block.text)
        for key, (value, row) in found.items():
            attributes[key] = value
            lines[key] = block.line_at(starts[row])
        section = None
    aliases = tuple(
        a.strip().strip("\"'") for a in attributes.pop("aliases", "").split(",") if a.strip()
    )
    lines.pop("aliases", None)
    kind = attributes.pop("type", "").lower() or _kind_from_path(path)
    lines.pop("type", None)
    return CanonCard(path, _cased(name.strip()), kind, aliases, attributes, lines)


#: A heading of a few words over one short paragraph is an attribute ("## Eyes" / "Grey.");
#: a longer paragraph (a biography) is not a value.
_SECTION_KEY_WORDS = 3
_SECTION_VALUE_MAX = 80
#: The attributes the tools check: a section of one of these holds its value however long.
_DESCRIBED = frozenset(kind.attribute for kind in KINDS)
_DESCRIBED_VALUE_MAX = 400
_GENERIC_HEADERS = frozenset(
    "attribute attributes field fields trait traits key property detail details fact facts "
    "feature features aspect".split()
)
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")


def _cleaned(value: str) -> str:
    return value.strip().rstrip(".").strip("*").strip()


def _line_attributes(rows: list[str]) -> dict[str, tuple[str, int]]:
    """ "Eyes: grey", "- **Eyes:** grey", "**Eyes**: grey", one a line."""
    found: dict[str, tuple[str, int]] = {}
    for index, row in enumerate(rows):
        match = _ATTRIBUTE.match(row)
        if match and len(match.group(1)) <= 30 and "|" not in match.group(1):
            found[match.group(1).strip().lower()] = (_cleaned(match.group(2)), index)
    return found


#: What a card's attribute is called: a two-column header row of these over one row of
#: values ("| Aliases | Pronouns |" / "| Watson | he/him |") is not attribute and value.
_CARD_KEYS = frozenset(
    "aliases alias pronouns pronoun gender sex eyes hair height handedness age role build "
    "complexion".split()
)


def _attributes_over_values(keys: list[str], body: list[tuple[int, list[str]]]) -> bool:
    return (
        len(body) == 1
        and all(k in _CARD_KEYS for k in keys)
        and body[0][1][0].strip("*").strip().lower() not in _CARD_KEYS
    )


def _table_attributes(rows: list[str]) -> dict[str, tuple[str, int]]:
    """A markdown table: two columns of attribute and value ("| Eyes | grey |", under a
    header row such as "| Attribute | Value |"), or a header row of attributes over one
    row of values ("| Eyes | Hair |" / "| grey | dark |")."""
    table = [(i, r) for i, r in enumerate(rows) if r.startswith("|") and r.count("|") >= 2]
    if len(table) < 2 or not _TABLE_RULE.match(table[1][1]):
        return {}
    cells = [(i, [c.strip() for c in r.strip().strip("|").split("|")]) for i, r in table]
    header, body = cells[0][1], [(i, c) for i, c in cells[2:]]
    found: dict[str, tuple[str, int]] = {}
    keys = [h.strip("*").strip().lower() for h in header]
    if len(header) == 2 and not _attributes_over_values(keys, body):
        if keys[0] not in _GENERIC_HEADERS:
            body.insert(0, cells[0])  # "| Eyes | grey |" written as the table's first row
        for index, (key, value) in ((i, c) for i, c in body if len(c) == 2):
            if key and value and len(key) <= 30:
                found[key.strip("*").strip().lower()] = (_cleaned(value), index)
    elif len(body) == 1:
        index, values = body[0]
        for key, value in zip(header, values, strict=False):
            if key and value and len(key) <= 30:
                found[key.strip("*").strip().lower()] = (_cleaned(value), index)
    return found


#: A list of names under "## Aliases" may run longer than a value.
_SECTION_NAMES_MAX = 400
#: A stop after one of these (or after an initial: "J. R. Hartley") does not end a sentence.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr capt col gen rev lt prof mme mlle messrs hon sgt maj cpl esq "
    "ch chap vol p pp no cf fig".split()
)
#: A stop, then a space and a capital: where a sentence may end ("Grey. She hid them").
_STOP_SPACE = re.compile(r"(\S+)\.\s+(?=[A-Z“\"‘'])")


def _is_prose(text: str) -> bool:
    """Whether TEXT holds a sentence's end: a stop, a space and a capital, not after "Mr"
    or "J" ("gray (ch. 6)" is a value with its source)."""
    for found in _STOP_SPACE.finditer(text.strip()):
        word = found.group(1).split(".")[-1].lstrip("(\"'“‘")
        if word.lower() not in _ABBREVIATIONS and not (len(word) == 1 and word.isupper()):
            return True
    return False


def _a_value_with_a_colon(heading: str, found: dict[str, tuple[str, int]]) -> bool:
    """Whether a `## Eyes` section's paragraph is its value though it reads as `key:
    value` lines: `dark: "her … deep dark eyes" (ch. 1)` under `## Eyes` is the eyes' value,
    not an attribute called "dark"."""
    if heading.strip().rstrip(":").lower() not in _DESCRIBED:
        return False
    return not any(key in _DESCRIBED or key in _CARD_KEYS for key in found)


def _section_attribute(heading: str, text: str) -> dict[str, tuple[str, int]]:
    key = heading.strip().rstrip(":").lower()
    longest = _SECTION_NAMES_MAX if key == "aliases" else _SECTION_VALUE_MAX
    if key in _DESCRIBED:
        # "## Hair" over "red when he was a young man; after a brain fever he wore a wig,
        # which was brown by the time he was forty": a described attribute's value may run
        # long, and is kept (to be checked, or said not to be), never silently dropped
        longest = _DESCRIBED_VALUE_MAX
    # a biography under "## Notes" is no value, but sentences under "## Hair" are the
    # hair's ("His forehead is prematurely bald. His big chestnut-colored beard …")
    too_long = len(text) > longest or (key not in _DESCRIBED and _is_prose(text))
    if len(key.split()) > _SECTION_KEY_WORDS or too_long or not key:
        return {}
    return {key: (_cleaned(text), 0)}


def _cased(name: str) -> str:
    """A title written in capitals ("COUNT DRACULA", a setext heading) is the name as the
    text writes it: "Count Dracula". Mixed case is kept as the writer spelled it."""
    if not name.isupper():
        return name
    return " ".join(w[:1] + w[1:].lower() for w in name.split())


@dataclass(frozen=True)
class Fact:
    entity: str
    attribute: str
    value: str
    source: str
    source_line: int = 0

    def line(self) -> str:
        return f"{self.entity}: {self.attribute} = {self.value}"


def facts_of(cards: Iterable[CanonCard]) -> list[Fact]:
    return [
        Fact(card.name, attribute, value, card.path, card.lines.get(attribute, 0))
        for card in cards
        for attribute, value in card.attributes.items()
        # a table's "Name" column is the card's name, not a fact about the person
        if not (attribute in ("name", "full name") and value.strip() == card.name)
    ]


def _core_tokens(name: str) -> tuple[str | None, list[str]]:
    tokens = name.replace(",", " ").split()
    honorific = None
    while tokens and tokens[0].lower().rstrip(".") in HONORIFICS:
        honorific = tokens.pop(0)
    return honorific, tokens


#: What may stand before the first word of a sentence.
_OPENERS = frozenset(" “\"‘'(—-")


@dataclass(frozen=True)
class Cast:
    """Every name the cards give, each pointing to one entity; a derived name two cards
    share (a family surname) is dropped, a name a card lists itself is kept."""

    owner: dict[str, str]
    genders: dict[str, Gender | None]
    pattern: re.Pattern[str] | None
    #: Names two people go by, read as neither (`shared_names`): each, with the longer name
    #: of the other that begins with it ("Tom Brangwen" → "Tom Brangwen the younger").
    shared: dict[str, str] = field(default_factory=dict)

    @cached_property
    def shared_pattern(self) -> re.Pattern[str] | None:
        """The names two people go by (`shared`), longest first, as whole words."""
        if not self.shared:
            return None
        names = sorted(self.shared, key=len, reverse=True)
        return re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b")

    @cached_property
    def key(self) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, Gender | None], ...]]:
        """What the cast says, hashable: two casts built from the same cards have one key
        (the memo of what a text states is keyed by it)."""
        return tuple(self.owner.items()), tuple(self.genders.items())

    def mentions(self, text: str, sentence_start: int = 0) -> list[tuple[int, int, str]]:
        """(start, end, entity) of each name in `text`, longest names first."""
        if self.pattern is None:
            return []
        found = []
        # A name opens its sentence when only quotes, brackets and dashes stand before it:
        # where that leading run ends is found once (slicing up to each match instead took
        # quadratic time over a long text read as one sentence).
        lead = sentence_start
        while lead < len(text) and text[lead] in _OPENERS:
            lead += 1
        for match in self.pattern.finditer(text):
            name = match.group(0)
            at_start = match.start() <= lead
            if at_start and " " not in name and name.lower() in _EVERYDAY:
                continue
            if " " not in name and self._inside_other_name(text, match.start(), match.end()):
                continue
            entity = canonical_name(self.owner, name)
            if entity is not None and not self._titled_as_another(text, match.start(), entity):
                found.append((match.start(), match.end(), entity))
        return found

    def _titled_as_another(self, text: str, start: int, entity: str) -> bool:
        """ "Lady Catherine" is not Kitty Bennet, nor "Miss Darcy" her brother: a title
        the cast does not give this person (a rank, or one of the other gender) before a
        name of theirs names someone else. The cast's own titled names ("Lady Catherine"
        on her card) match whole first and never come here."""
        title = _TITLE_BEFORE.search(text, max(0, start - 16), start)
        if title is None or title.group(1).lower() not in HONORIFICS:
            return False
        word = title.group(1).lower()
        if word in _RANKS:
            return True
        titled, known = HONORIFICS[word], self.genders.get(entity)
        return titled is not None and known is not None and titled != known

    def people(
        self, text: str
    ) -> tuple[list[tuple[int, int, str]], list[tuple[int, int, Gender | None]]]:
        """Who `text` names: (start, end, entity) of each name in the cast, a titled slip
        of one included ("Dr. Livesy" is the doctor); and (start, end, gender) of each
        stranger: a titled name no card gives ("Mr. Collins"), or a given name and surname
        no card gives ("Helen Burns", gender unknown), someone a pronoun may mean too."""
        named = self.mentions(text)
        taken = [(s, e) for s, e, _ in named]
        strangers: list[tuple[int, int, Gender | None]] = []
        for match in TITLED_NAME.finditer(text):
            if any(s < match.end() and match.start() < e for s, e in taken):
                continue
            taken.append((match.start(), match.end()))
            if names_a_thing(text, match):
                continue  # "the General Thanksgiving": a prayer
            entity = self.slip_of(match.group("name"))
            if entity is not None:
                named.append((match.start(), match.end(), entity))
            elif (title := match.group("title").lower()) not in SAINT_TITLES:
                strangers.append((match.start(), match.end(), HONORIFICS.get(title)))
        if self.shared_pattern is not None:
            # "Tom Brangwen", father and son: someone in view, but which of them no one knows
            for match in self.shared_pattern.finditer(text):
                if any(s < match.end() and match.start() < e for s, e in taken):
                    continue
                taken.append((match.start(), match.end()))
                longer = self.shared[match.group(0)]
                strangers.append((match.start(), match.end(), self.genders.get(self.owner[longer])))
        for match in _FULL_NAME.finditer(text):
            if any(s < match.end() and match.start() < e for s, e in taken):
                continue
            if is_given_name(match.group(1)) and not is_common_word(match.group(2)):
                strangers.append((match.start(), match.end(), None))
        return named, strangers

    def slip_of(self, word: str) -> str | None:
        """The one entity whose name `word` is a slip of ("Livesy" for "Livesey"): the same
        first letter, and as alike as `_SLIP_RATIO`."""
        lowered = word.lower()
        found = {
            entity
            for entity, words in self._words_of.items()
            for name in words
            if len(name) >= 4
            and name[0] == lowered[0]
            and name != lowered
            and SequenceMatcher(None, lowered, name).ratio() >= _SLIP_RATIO
        }
        return next(iter(found)) if len(found) == 1 else None

    @cached_property
    def _words_of(self) -> dict[str, frozenset[str]]:
        """Each entity's name words, lower-cased: "lucy", "westenra"."""
        words: dict[str, set[str]] = {}
        for name, entity in self.owner.items():
            words.setdefault(entity, set()).update(w.lower().strip(".") for w in name.split())
        return {entity: frozenset(found) for entity, found in words.items()}

    def _inside_other_name(self, text: str, start: int, end: int) -> bool:
        """ "John" in "St. John Rivers" or "John Rivers" is another man than John Reed: a
        one-word name after a saint's title, or before a capitalised word that is none of
        its owner's names nor a slip of one ("Lucy Westerna" is still Lucy), belongs to a
        longer name nobody in the cast goes by (the cast's own longer names match first)."""
        if _SAINT.search(text, max(0, start - 8), start):
            return True
        after = _NEXT_CAPITALISED.match(text, end)
        if after is None:
            return False
        entity = canonical_name(self.owner, text[start:end])
        word = after.group(1).lower()
        own = self._words_of.get(entity or "", frozenset())
        return not any(
            word == name or SequenceMatcher(None, word, name).ratio() >= _SLIP_RATIO for name in own
        )

    def name_tokens(self) -> set[str]:
        """Single words that are part of some name, honorifics left out."""
        tokens: set[str] = set()
        for name in self.owner:
            _, core = _core_tokens(name)
            tokens.update(t.strip(".") for t in core)
        return tokens


#: Ranks and callings an alias "the Doctor" may name: anyone holding one, so never a name
#: alone.
_CALLINGS = frozenset(
    "doctor captain colonel general major lieutenant sergeant corporal admiral commodore "
    "professor judge squire parson rector vicar curate governor master mistress king queen "
    "prince princess duke duchess earl count countess baron baroness lord lady sir dame "
    "bishop dean archdeacon abbot prior father mother brother sister uncle aunt cousin "
    "nurse maid captain skipper mate boatswain chief inspector constable sheriff marshal "
    "mayor alderman president senator".split()
)


def build_cast(cards: Sequence[CanonCard]) -> Cast:
    explicit: dict[str, str] = {}
    derived: dict[str, set[str]] = {}
    for card in cards:
        for name in (card.name, *card.aliases):
            explicit.setdefault(name, card.name)
        honorific, core = _core_tokens(card.name)
        candidates = [" ".join(core)] if core else []
        # People go by a given name or a surname alone; places and things by their full name.
        if core and card.kind not in ("location", "place", "item", "object", "organisation"):
            candidates.append(core[0])
            if len(core) > 1:
                candidates.append(core[-1])
            if honorific:
                candidates.append(f"{honorific} {core[0]}")
                candidates.append(f"{honorific} {core[-1]}")
        for alias in card.aliases:
            _, alias_core = _core_tokens(alias)
            if len(alias_core) > 1 and card.kind == "character":
                candidates.append(alias_core[0])
            if (
                alias.split()[0].lower() == "the"
                and len(alias_core) == 1
                and alias_core[0].lower() not in _CALLINGS
                and card.kind == "character"
            ):
                # "the Patriarch": "the unwieldy Patriarch" is he too (a calling, "the
                # Doctor", is not: "Doctor Jones" would be taken for him)
                candidates.append(alias_core[0])
        for candidate in candidates:
            # Only a capitalised word stands for someone alone: an alias "the black tower"
            # is matched as the whole phrase, never as every "black" in the book.
            if len(candidate) >= 3 and candidate[:1].isupper():
                derived.setdefault(candidate, set()).add(card.name)
    owner = dict(explicit)
    for name, owners in derived.items():
        if name not in owner and len(owners) == 1:
            owner[name] = next(iter(owners))
    shared = shared_names(owner)
    for name in shared:
        del owner[name]
    genders = {card.name: card.gender for card in cards}
    return Cast(owner, genders, _names_pattern(owner), shared)


#: What sets a person's name apart from another's that it begins with: "Tom Brangwen the
#: younger", "Mr. Osbaldistone senior", "Lord Durrisdeer (the old lord)", "Rudolf the
#: Fifth", "Roger Hamley of Hamley" (not "John Fry" beside "John": another name).
_QUALIFIER = re.compile(
    r"\s+(?:\(|of\s|(?:the\s+)?(?:younger|elder|older|senior|junior|jr\b|sr\b|first|second|"
    r"third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|[ivx]+\b))",
    re.IGNORECASE,
)


def shared_names(owner: dict[str, str]) -> dict[str, str]:
    """Names two people of the cast both go by: one card's name that another's begins
    with, set apart only by a qualifier (father and son both "Tom Brangwen", the son's card
    "Tom Brangwen the younger"), and every shorter name of the first that begins it too
    ("Tom"). The text cannot say which of the two such a name means, so it is read as
    neither: what is said of it is nobody's, and never a finding."""
    shared: dict[str, str] = {}
    for name, who in owner.items():
        for longer, whom in owner.items():
            if whom != who and longer.startswith(name) and _QUALIFIER.match(longer, len(name)):
                shared[name] = longer
                for shorter, also in owner.items():
                    if also == who and name.startswith(shorter + " "):
                        shared.setdefault(shorter, longer)
    return shared


#: Titles of rank: "Lady Catherine" is a lady, whatever else a Catherine of the cast is.
_RANKS = frozenset(
    "sir lord lady dame king queen prince princess duke duchess earl baron baroness count "
    "countess".split()
)
_TITLE_BEFORE = re.compile(r"\b([A-Z][a-z]+)\.?\s+$")
#: A title and a capitalised name: "Miss Gryce", "Mr. Lloyd".
TITLED_NAME = re.compile(
    r"\b(?P<title>"
    + "|".join(sorted((h.capitalize() for h in HONORIFICS if h != "the"), key=len, reverse=True))
    + r")\.?\s+(?P<name>[A-Z][a-z]+(?:[’'][a-z]+)?)\b"
)
#: How alike a word must be to one of a person's names to be read as a slip of it.
_SLIP_RATIO = 0.75
_FULL_NAME = re.compile(r"\b([A-Z][a-z]+)[ \t]+([A-Z][a-z]+)\b")
#: Titles that name a saint: a parish, a church or a day far more often than anyone in play
#: ("the living of St. Ewold"), so never a stranger a pronoun may mean.
SAINT_TITLES = frozenset({"st", "saint"})
_SAINT = re.compile(r"(?:\bSt\.?|\bSaint)\s+$")
#: Ranks that, after "the", name a thing called after someone: "the words of the General
#: Thanksgiving", "aboard the General Grant", "at the Admiral Benbow" (a man is "General
#: Grant" without it; "the Reverend Mr. Collins" is one still).
_RANKS_AFTER_THE = frozenset(
    "captain capt colonel col general major lieutenant sergeant admiral commodore".split()
)
_THE_BEFORE = re.compile(r"\bthe\s+$", re.IGNORECASE)


def names_a_thing(text: str, match: re.Match[str]) -> bool:
    """Whether a TITLED_NAME match names a thing, not a person: a rank after "the"."""
    return match.group("title").lower() in _RANKS_AFTER_THE and bool(
        _THE_BEFORE.search(text, max(0, match.start() - 6), match.start())
    )


_NEXT_CAPITALISED = re.compile(r"(?:[ \t]+|[ \t]*\r?\n[ \t]*)([A-Z][a-z]+)")


def _names_pattern(owner: dict[str, str]) -> re.Pattern[str] | None:
    """One pattern for every name, longest first; a phrase matches only whole ("the black
    tower"), its words separated by any run of spaces, and "the Count" also opens a
    sentence as "The Count"."""
    names = sorted(owner, key=len, reverse=True)
    if not names:
        return None
    # Markdown's emphasis underscores are not word characters here: "_Lucy Westenra to Mina
    # Murray_" names both; a hyphen joins a name to a word ("Jean-Paul"), a double one is a
    # dash ("Cap'n Trelawney--what's he to think?").
    return re.compile(
        r"(?<![^\W_])(?<![^\W_]-)(?:"
        + "|".join(_name_pattern(n) for n in names)
        + r")(?![^\W_])(?!-[^\W_])"
    )


def _name_pattern(name: str) -> str:
    words = [re.escape(w) for w in name.split()]
    if words and words[0][:1].islower() and words[0][:1].isalpha():
        # "the Count", "my aunt" also open a sentence: "The Count", "My aunt"
        first = words[0]
        words[0] = f"[{first[0]}{first[0].upper()}]{first[1:]}"
    return r"\s+".join(words)


def canonical_name(owner: dict[str, str], found: str) -> str | None:
    """The entity a matched name stands for, however its spaces run and whether a
    lower-case alias ("the Count", "my aunt") opens a sentence."""
    name = " ".join(found.split())
    return owner.get(name) or owner.get(name[:1].lower() + name[1:])


def cast_from_names(entity_names: dict[str, Sequence[str]]) -> Cast:
    """A cast from entity -> names, for callers that hold names without cards."""
    counts = Counter(n for ns in entity_names.values() for n in set(ns))
    owner = {n: e for e, ns in entity_names.items() for n in ns if counts[n] == 1 or n == e}
    return Cast(owner, dict.fromkeys(entity_names), _names_pattern(owner))
