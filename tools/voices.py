"""Who says "I" and who is "you": the narrator, the speaker of a paragraph's dialogue, the
person a speech addresses, and the writer of a letter or journal.

Precision first: each is named only when the text leaves one candidate. A first-person
narrator is declared (`workspace.json` `narrator`) or detected (first-person narration whose
one character is named in other people's speech far more than in the narration); a journal
or letter heading ("JONATHAN HARKER'S JOURNAL", "Letter, Lucy Westenra to Mina Murray")
names who writes what follows, until the next heading. A speaker is the one person a speech
tag names ("said Mr. Rochester", "Bessie cried", "returned she" with one woman in sight),
never a guess between two; the person addressed is the one name used as a vocative in the
speech ("You're not grown so very tall, Miss Jane").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from controlroom.tools.canon import Cast, Gender
from controlroom.tools.stopping import checkpoint
from controlroom.tools.text import Block, Document, inside, quoted_spans, read_document

FIRST_PERSON = frozenset("i me my mine myself i'm i've i'd i'll".split())
SECOND_PERSON = frozenset("you your yours yourself you're you've you'd you'll".split())
SPEECH_VERBS = frozenset(
    """said says say cried cries asked asks replied replies returned answered continued
    exclaimed observed remarked added pleaded whispered murmured called rejoined interposed
    inquired enquired demanded explained urged began resumed repeated shouted muttered
    responded retorted suggested declared insisted laughed sighed""".split()
)
_WORD = re.compile(r"[A-Za-z]+(?:[’'][A-Za-z]+)*")
_JOURNAL = re.compile(
    r"^[_*\s]*(?P<who>[A-Z][\w.’' ]+?)[’']s\s+(?:phonograph\s+)?"
    r"(?:journal|diary|notebook|memorandum|memoranda|log|narrative|statement)\b",
    re.IGNORECASE,
)
_LETTER = re.compile(
    r"^[_*\s]*(?:letter|telegram|note|postcard)[,:]?\s+(?:from\s+)?(?P<who>.+?)\s+to\s+"
    r"(?P<to>[^_*,.(]+)",
    re.IGNORECASE,
)
#: A heading line is short; a paragraph that merely mentions a diary is not one.
_MAX_HEADING = 90
#: First-person narration: "I", "me", "my" at least this share of the narration's words.
_FIRST_PERSON_SHARE = 0.012
_PRONOUN_GENDER: dict[str, Gender] = {"he": "he", "she": "she"}
#: A narrator others never name in speech cannot be told from the rest of the cast.
_MIN_ADDRESSED = 3


@dataclass(frozen=True)
class Section:
    """Who writes a stretch of a document, and to whom (a letter's addressee)."""

    writer: str
    addressee: str | None
    letter: bool


def _entity_in(text: str, cast: Cast) -> str | None:
    """The one entity a heading names, matched however it is cased ("JONATHAN HARKER")."""
    for candidate in (text, text.title()):
        found = {entity for _, _, entity in cast.mentions(candidate)}
        if len(found) == 1:
            return next(iter(found))
    return None


def sections(doc: Document, cast: Cast) -> dict[int, Section]:
    """Block index -> the journal's or letter's writer, for the blocks after each heading."""
    current: Section | None = None
    found: dict[int, Section] = {}
    for index, block in enumerate(doc.blocks):
        text = block.text.strip()
        if len(text) <= _MAX_HEADING:
            heading = _heading(text, cast)
            if heading is not None:
                current = heading
                continue
            if block.kind == "heading" and re.match(r"(?i)^(chapter|part|book)\b", text):
                current = None
        if current is not None:
            found[index] = current
    return found


def _heading(text: str, cast: Cast) -> Section | None:
    letter = _LETTER.match(text)
    if letter:
        writer = _entity_in(letter.group("who"), cast)
        if writer:
            return Section(writer, _entity_in(letter.group("to"), cast), True)
    journal = _JOURNAL.match(text)
    if journal:
        writer = _entity_in(journal.group("who"), cast)
        if writer:
            return Section(writer, None, False)
    return None


def detect_narrator(texts: Iterable[str], cast: Cast) -> str | None:
    """The first-person narrator of these texts, when the narration is in the first person
    and one character is named in others' speech far more often than in the narration
    (narrators are addressed, rarely named by themselves); else None."""
    first = words = 0
    spoken: Counter[str] = Counter()
    told: Counter[str] = Counter()
    for text in texts:
        checkpoint()  # many long files: stoppable between them (tools/stopping.py)
        doc = read_document(text)
        for block in doc.prose:
            quotes = quoted_spans(block.text)
            for match in _WORD.finditer(block.text):
                if not inside(quotes, match.start()):
                    words += 1
                    first += match.group(0).lower().replace("’", "'") in FIRST_PERSON
            for start, _, entity in cast.mentions(block.text):
                (spoken if inside(quotes, start) else told)[entity] += 1
    if not words or first / words < _FIRST_PERSON_SHARE:
        return None
    # Named in speech, seldom in the narration: how often per narration mention.
    ranked = sorted(
        (
            (spoken[e] / (1 + told[e]), e)
            for e in spoken
            if spoken[e] >= _MIN_ADDRESSED and cast.genders.get(e) != "they"
        ),
        reverse=True,
    )
    if not ranked or (len(ranked) > 1 and ranked[1][0] * 2 > ranked[0][0]):
        return None
    return ranked[0][1]


@dataclass(frozen=True)
class Voices:
    """Who "I" and "you" are in one paragraph: outside its quotes, and inside each one."""

    narrator: str | None
    speaker: str | None
    addressees: tuple[tuple[int, int, str | None], ...]
    quotes: tuple[tuple[int, int], ...]

    def first_person(self, offset: int) -> str | None:
        return self.speaker if inside(self.quotes, offset) else self.narrator

    def second_person(self, offset: int) -> str | None:
        for start, end, entity in self.addressees:
            if start <= offset < end:
                return entity
        return None

    def quote_at(self, offset: int) -> tuple[int, int] | None:
        return next(((s, e) for s, e in self.quotes if s <= offset < e), None)

    def spoken_by(self, speaker: str) -> Voices:
        """This paragraph's speech as `speaker`'s (one who "went on:" just before)."""
        return replace(self, speaker=speaker)

    def taking_turn(self, speaker: str, addressee: str) -> Voices:
        """This paragraph's speech as the next turn of a two-person exchange: `speaker`
        says it, to `addressee` unless it names someone else."""
        return replace(
            self,
            speaker=speaker,
            addressees=tuple((s, e, a or addressee) for s, e, a in self.addressees),
        )


def untagged_speech(text: str, quotes: tuple[tuple[int, int], ...]) -> bool:
    """A paragraph of speech alone: quotes, and no word outside them (no tag, no
    narration)."""
    return bool(quotes) and not _outside_words(text, quotes)


def voices_of(
    block: Block,
    mentions: Sequence[tuple[int, int, str]],
    cast: Cast,
    narrator: str | None,
    section: Section | None,
) -> Voices:
    text = block.text
    quotes = quoted_spans(text)
    if section is not None:
        narrator = section.writer
    speaker = _speaker(text, quotes, mentions, cast)
    # A letter set in quotation marks, with no speech tag: its writer speaks.
    untagged = not any(_is_speech_verb(w) for w in _outside_words(text, quotes))
    if speaker is None and section is not None and section.letter and quotes and untagged:
        speaker = section.writer
    addressees = []
    for start, end in quotes:
        vocatives = {
            entity
            for s, e, entity in mentions
            if start <= s < end and _vocative(text, s, e, start, end) and entity != speaker
        }
        addressee = next(iter(vocatives)) if len(vocatives) == 1 else None
        if addressee is None and section is not None and speaker == section.writer:
            addressee = section.addressee
        addressees.append((start, end, addressee))
    return Voices(narrator, speaker, tuple(addressees), quotes)


def _outside_words(text: str, quotes: tuple[tuple[int, int], ...]) -> list[str]:
    return [m.group(0).lower() for m in _WORD.finditer(text) if not inside(quotes, m.start())]


def _is_speech_verb(word: str) -> bool:
    return word in SPEECH_VERBS


def _vocative(text: str, start: int, end: int, quote_start: int, quote_end: int) -> bool:
    """A name used to address someone: set off by a comma, or ending or opening the speech
    ("Miss Jane, take off your pinafore", "you'll see, Nick", "Bessie!")."""
    before = text[quote_start:start].rstrip(" ")
    after = text[end:quote_end].lstrip(" ")
    opens = not before.strip("“\"‘'—- ")
    set_off = before.endswith((",", "—")) or opens
    closes = after[:1] in (",", "!", "?", ".", "”", '"', "—", ";") or not after
    return set_off and closes


def _speaker(
    text: str,
    quotes: tuple[tuple[int, int], ...],
    mentions: Sequence[tuple[int, int, str]],
    cast: Cast,
) -> str | None:
    """The one person the paragraph's speech tags name; None when none do, or several."""
    if not quotes:
        return None
    tokens = [
        (m.start(), m.end(), m.group(0).lower())
        for m in _WORD.finditer(text)
        if not inside(quotes, m.start())
    ]
    outside = [(s, e, entity) for s, e, entity in mentions if not inside(quotes, s)]
    speakers: set[str] = set()
    for i, (start, _, word) in enumerate(tokens):
        if word not in SPEECH_VERBS:
            continue
        for j in (i + 1, i - 1, i + 2, i - 2):
            if not 0 <= j < len(tokens):
                continue
            near_start, _, near = tokens[j]
            entity = next((x for s, e, x in outside if s <= near_start < e), None)
            if entity is None and near in _PRONOUN_GENDER:
                entity = _only_named(outside, cast, _PRONOUN_GENDER[near], start)
            if entity is not None:
                speakers.add(entity)
                break
    return next(iter(speakers)) if len(speakers) == 1 else None


def _only_named(
    mentions: Sequence[tuple[int, int, str]], cast: Cast, gender: Gender, before: int
) -> str | None:
    named = {e for s, _, e in mentions if s < before and cast.genders.get(e) in (gender, None)}
    return next(iter(named)) if len(named) == 1 else None
