"""consistency_checker: canon contradictions and misspelled names across many scenes."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

from pydantic import Field

from controlroom.domain.errors import ToolError
from controlroom.tools.analysis import STOPWORDS, edit_distance_at_most_one
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.builtin.canon_checker import (
    canon_digest,
    check_scenes,
    load_cards,
    workspace_settings,
)
from controlroom.tools.canon import HONORIFICS
from controlroom.tools.layout import detect_layout
from controlroom.tools.text import Block, quoted_spans, read_document
from controlroom.tools.vocabulary import describes_the_person
from controlroom.tools.wordlist import derives_words, is_common_word, is_place_name
from controlroom.tools.workspace import Workspace

#: A capitalised word; a hyphen joins it to another ("Jean-Paul"), a double one is a dash.
_CAPITALISED = re.compile(r"(?<![\w’'])(?<!\w-)[A-Z][a-z]+(?:[’'][a-z]+)?(?!\w)(?!-\w)")
#: A name written differently this often is the writer's choice, not a slip.
MAX_VARIANT_USES = 2
#: "the Jeune Amelie", "Molloy Malony", "Sharpe of Frith Street": a word inside another
#: proper name, or naming someone by their place, is that other name's.
_CAPITALISED_BEFORE = re.compile(r"(?<![.!?:;“\"‘(—–-])[ \t]+[A-Z][a-z]+[ \t]+$")
_OF_A_PLACE_AFTER = re.compile(r"[ \t]+of[ \t]+[A-Z][a-z]+")
#: "Clair de Lune", "Pont du Gard": a particle and a capitalised word after, a foreign title
#: or place of its own.
_PARTICLE_AFTER = re.compile(r"[ \t]+(?:de|du|des|la|le|von|van|del|della|di)[ \t]+[A-Z]")
#: "Madame de Raudon", "Herr von Arnim": a name after a particle is a foreign one.
_PARTICLE_BEFORE = re.compile(r"\b(?:de|von|van|du|di|del|der|le|la)[ \t]+$")
#: A Latin word right before: "anno Dombei" puts the name into Latin, on purpose.
_LATIN_BEFORE = re.compile(
    r"\b(?:anno|annus|ab|ad|apud|ante|circa|contra|cum|domus|ex|filius|filia|inter|per|"
    r"post|pro|sine|sub|vide)[ \t]+$"
)
#: "Beli' me, John", "Giovann' Battista": a word clipped in speech ("believe", "Giovanni"),
#: followed by its apostrophe and the next word; a name at the end of a quotation closes it
#: with a stop or a comma first.
_CLIPPED = re.compile(r"[’'][ \t]+[A-Za-z]")
#: "the ironworks of Manson and of Shuman and of Van Deher": a name in a list beside another
#: capitalised word, the neighbour after it or before it.
_LISTED_NEXT = re.compile(
    r"(?:,[ \t]*|[ \t]+)(?:and|or|nor)[ \t]+(?:of[ \t]+)?([A-Z][a-z]+)|,[ \t]*([A-Z][a-z]+)"
)
_LISTED_BEFORE = re.compile(r"([A-Z][a-z]+)(?:,?[ \t]+(?:and|or|nor)[ \t]+(?:of[ \t]+)?|,[ \t]*)$")
#: "lunch at Henri's.", "went to Sherry's": a possessive standing alone after "at" or "to"
#: is a shop, a restaurant or a house, named for someone who need not be in the book.
_ALONE_AFTER_POSSESSIVE = re.compile(r"[ \t]*(?:[.,;:!?)—\"”’']|--|$)")
#: "three to one at Jena", "the road to Brussels": where a town's name stands.
_PLACE_BEFORE = re.compile(
    r"\b(?:at|in|into|to|from|near|towards?|through|of|beyond|outside|round|via)[ \t]+$",
    re.IGNORECASE,
)


_VOWELS = frozenset("aeiouy")


_PET_ENDING = re.compile(r"(?:ie|ey|y|i)$")


def _pet_stem(name: str) -> str:
    """A pet name less its ending: "Georgie", "Georgey" and "Georgy" are all "Georg"."""
    return _PET_ENDING.sub("", name.lower()) if len(name) > 4 else name.lower()


def likely_typo(found: str, name: str) -> bool:
    """One slip away: two letters swapped ("Kale"), a vowel for a vowel ("Sybil",
    "Hallwerd"), a letter for one that sounds the same ("Lawrence"), or a letter more or
    less in a long name. "Hardy" is not "Harry": a consonant for a consonant is usually
    another name."""
    if len(found) == len(name):
        diffs = [i for i in range(len(found)) if found[i] != name[i]]
        swapped = len(diffs) == 2 and found[diffs[0]] == name[diffs[1]]
        if swapped and found[diffs[1]] == name[diffs[0]]:
            return True  # "Sybil" for "Sibyl"
    if not edit_distance_at_most_one(found, name):
        return False
    if len(found) != len(name):
        return min(len(found), len(name)) >= 5
    diffs = [i for i in range(len(found)) if found[i] != name[i]]
    if len(diffs) == 2:
        return True
    a, b = found[diffs[0]].lower(), name[diffs[0]].lower()
    # A silent "h" makes "Joan" sound like "John": a letter for an "h" is another name.
    return (a in _VOWELS and b in _VOWELS) or ("h" not in (a, b) and _sounds_alike(found, name))


def _sounds_alike(found: str, name: str) -> bool:
    """ "Lawrence" for "Laurence": the same Metaphone key, where "Hardy" and "Harry" differ."""
    import jellyfish  # only the name check needs it: kept out of every other command's start

    return bool(jellyfish.metaphone(found) == jellyfish.metaphone(name))


class ConsistencyCheckerArgs(ToolArgs):
    scene_paths: list[str]
    canon_paths: list[str] = Field(default_factory=list)
    #: Who narrates in the first person; else `workspace.json`'s `narrator`, else detected.
    narrator: str | None = None
    #: Spellings meant as written, added to `workspace.json`'s `ignore_names`.
    ignore_names: list[str] = Field(default_factory=list)


#: Plural titles: "the Misses Reed", "Messrs. Hawkins".
_PLURAL_TITLES = frozenset("misses messrs mesdames mesdemoiselles".split())
#: A capitalised word right after a name on its line: "Andrew Bell", a first name and a surname.
_SURNAME_AFTER = re.compile(r"[ \t]+[A-Z][a-z]+")
#: A title is capitalised: "my sister Margret" names no Sister Margret.
_TITLE_BEFORE = re.compile(
    r"\b(" + "|".join(h.capitalize() for h in HONORIFICS if h != "the") + r")\.?\s+$"
)


@dataclass(frozen=True)
class _NameBook:
    """What a capitalised word is checked against: the cards' names, the names that take a
    title ("Mrs. Fairfax": a surname), the writer's intended variants."""

    names: frozenset[str]
    known: frozenset[str]
    surnames: frozenset[str]
    given: frozenset[str]
    ignored: frozenset[str]

    @classmethod
    def of(cls, known: set[str], ignored: list[str]) -> _NameBook:
        # "the Baronet", "the Captain": a card's alias that is an ordinary word is a title,
        # never a name a capitalised word could be a slip of ("Mr. Barnet's")
        surnames = {
            name.split()[-1].strip(".")
            for name in known
            if len(name.split()) > 1 and not _a_title(name.split()[-1].strip("."))
        }
        given = {
            name.split()[0]
            for name in known
            if len(name.split()) > 1 and name.split()[0].lower().rstrip(".") not in HONORIFICS
        }
        return cls(
            frozenset(n for n in known if len(n) >= 4 and not _a_title(n)),
            frozenset(known),
            frozenset(surnames),
            frozenset(given),
            frozenset(ignored),
        )

    @cached_property
    def words(self) -> frozenset[str]:
        """Every word of every known name: "Basil", "Hallward", "Mrs.", "Fairfax" (built
        once: it is asked of every capitalised word of the book)."""
        return frozenset(w for name in self.known for w in name.split())

    def near(self, word: str) -> list[str]:
        """The names WORD may be a slip for, the likeliest first: one spelt the same but for
        a pet name's ending ("Georgie" for the card's "Georgey", not "George"), then the
        rest in order. Only names one slip away make a finding at all."""
        typos = sorted(n for n in self.names if n[0] == word[0] and likely_typo(word, n))
        if not typos:
            return []
        stem = _pet_stem(word)
        # a pet name itself first: "Cainey" is a slip for "Cainy", not for "Cain"
        same = sorted(
            (n for n in self.names if n != word and _pet_stem(n) == stem),
            key=lambda n: (_pet_stem(n) == n.lower(), n),
        )
        return list(dict.fromkeys([*same, *typos]))

    def pet_form(self, word: str, name: str) -> bool:
        """ "Georgey", "Georgie" or "Johnny" made from a card's "George" or "John", when no
        card has a pet form of that name itself (then another spelling is a slip of it)."""
        lowered, base = word.lower(), name.lower()
        made = any(
            lowered in (base + end, base.removesuffix("e") + end, base + base[-1:] + end)
            for end in ("y", "ey", "ie")
        )
        stem = _pet_stem(word)
        return made and not any(n != word and _pet_stem(n) == stem for n in self.names)

    def clipped_form(self, word: str) -> bool:
        """ "Liza" of a card's "Eliza": a known name less its first letters."""
        lowered = word.lower()
        return len(lowered) >= 4 and any(
            part.lower().endswith(lowered) and len(part) > len(lowered)
            for name in self.names
            for part in name.split()
        )

    def intended(self, word: str) -> bool:
        """A plural of a name ("the Bennets", "the Lucases"), a plural title, an ordinary
        word, or a spelling the writer keeps: not a slip."""
        lowered = word.lower()
        return (
            word in self.ignored
            or lowered in _PLURAL_TITLES
            or (word.endswith("s") and word[:-1] in self.known)
            or (word.endswith("es") and word[:-2] in self.known)
            # "all you Scotchmen": the plural of a card's "the Scotchman"
            or (word.endswith("men") and word[:-3] + "man" in self.words)
            # an Italian plural of a name's word: "the Frati" of "the Frate", "Messeri" of
            # "Messer", "the Neri" of "Bernardo del Nero"
            or (
                word.endswith("i")
                and any(w in self.words for w in (word[:-1] + "e", word[:-1] + "o", word[:-1]))
            )
        )


#: Ranks and callings a card may list as an alias ("the Baronet"): titles, not names.
_RANKS = frozenset(
    "baronet baron baroness captain major colonel general admiral doctor squire parson "
    "rector vicar curate lord lady sir king queen prince princess duke duchess earl count "
    "countess marquis marquess viscount professor judge sergeant corporal lieutenant "
    "governor master mistress maltster miller shepherd bailiff".split()
)


def _a_title(name: str) -> bool:
    """A card's alias that is a rank or calling ("Baronet", "Captain"), not a name."""
    return name.lower().strip(".") in _RANKS


#: Speech set down as a dialect sounds: elided words ("a'", "o'", "'em", "goin'") and the
#: old or country forms ("thee", "ye", "ain't", "canna").
_DIALECT = re.compile(
    r"\b[A-Za-z]+['’](?=[\s,.;:!?])|(?<=\s)['’][a-z]+\b|\b(?:thee|thou|thy|ye|yer|ee|ain['’]t|"
    r"canna|dinna|hae|wi['’]|zo|ee['’]ll|bain['’]t|summat|nowt|owt|nae|maister|ken|kens|"
    r"bairn|bairns|gude|guid|auld|verra|winna|wouldna|couldna|shouldna|didna|isna|wasna|"
    r"hasna|doon|oot|aboot|noo|hoo|richt|nicht|yon)\b",
    re.IGNORECASE,
)


#: How many lower-case words a paragraph needs before its language is judged.
_LANGUAGE_SAMPLE = 8


def _in_another_language(text: str) -> bool:
    """Whether most of a paragraph's lower-case words are no English words: a letter or a
    song quoted in another language, whose spellings of names are its own."""
    words = re.findall(r"\b[a-z]+\b", text)
    if len(words) < _LANGUAGE_SAMPLE:
        return False
    english = sum(1 for word in words if is_common_word(word))
    return english * 2 < len(words)


def _set_beside(sentence: str, word: str, name: str) -> bool:
    """Whether `sentence` holds the variant and the name next to each other, with nothing
    but stops, dashes, quotes or an "or" between: a groping for the name, or a variant
    the text introduces as one."""
    between = r"[\W_]{1,6}(?:or[\W_]{1,4})?"
    a, b = re.escape(word), re.escape(name)
    return bool(re.search(rf"\b{a}{between}{b}\b|\b{b}{between}{a}\b", sentence))


def _speech_after(blocks: Sequence[Block], index: int, after: int) -> str:
    """The speech of the rest of paragraph `index` after offset `after`, and of the next
    paragraph: what is said in reply to a speech."""
    rest = blocks[index].text[after:]
    spans = [rest[a:b] for a, b in quoted_spans(rest)]
    if index + 1 < len(blocks):
        following = blocks[index + 1].text
        spans += [following[a:b] for a, b in quoted_spans(following)]
    return " ".join(spans)


def _vowel_shifted(found: str, name: str) -> bool:
    """One vowel sound for another, all else alike: how a dialect says a name ("Larna" for
    "Lorna", "Camperdoon" for "Camperdown"), read as a slip only in narration."""
    a, b = found.lower(), name.lower()
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    middle_a, middle_b = a[start : len(a) - end], b[start : len(b) - end]
    if not middle_a or not len(middle_a) == len(middle_b) <= 2:
        return False  # "Trelawny" for "Trelawney" is a slip still
    if all(ch in "aeiou" for ch in middle_a + middle_b):
        return True
    # the broad "oo" of "doon" for "down"; "Lawrence" for "Laurence" is a spelling
    return {middle_a, middle_b} == {"o", "w"} and a[start - 1 : start] == "o"


def _elided(found: str, name: str) -> bool:
    """ "Ball’ntrae" for "Ballantrae": an apostrophe stands for the letters a speaker drops
    from the name, the rest of it as written."""
    for mark in ("’", "'"):
        head, sep, tail = found.partition(mark)
        if sep and head and tail and mark not in tail:
            return name.startswith(head) and name.endswith(tail) and len(name) > len(head + tail)
    return False


def _drawled(found: str, name: str) -> bool:
    """ "Hairry" for "Harry": a vowel drawn into a diphthong, as a broad accent says it."""
    if len(found) != len(name) + 1:
        return False
    for at, letter in enumerate(found):
        if letter.lower() not in "aeiou" or found[:at] + found[at + 1 :] != name:
            continue
        beside = found[at - 1 : at] + found[at + 1 : at + 2]
        if any(ch.lower() in "aeiou" for ch in beside):
            return True
    return False


def _folksy_ending(found: str, name: str) -> bool:
    """ "Ezry" for "Ezra", "Sary" for "Sara": a name's closing "a" as a speaker says it."""
    return name.endswith("a") and found == name[:-1] + "y"


def _pet_ending_dropped(found: str, name: str) -> bool:
    """ "Fance" for "Fancy": a name's pet ending ("-y", "-ie", "-ey") clipped off as a
    speaker says it, the stem kept whole (a closing "e" for the sound of the vowel before)."""
    ending = re.search(r"(?:ie|ey|y)$", name)
    if ending is None:
        return False
    stem = name[: ending.start()]
    return len(stem) >= 3 and found in (stem, stem + "e")


def _stretched(word: str) -> bool:
    """ "I'll tell you, Carrrie": a letter held three times over, in speech, is a name
    drawn out for emphasis."""
    return re.search(r"([a-z])\1\1", word.lower()) is not None


def _transposed(found: str, name: str) -> bool:
    diffs = [i for i in range(len(found)) if i < len(name) and found[i] != name[i]]
    return (
        len(found) == len(name)
        and len(diffs) == 2
        and diffs[1] == diffs[0] + 1
        and found[diffs[0]] == name[diffs[1]]
        and found[diffs[1]] == name[diffs[0]]
    )


def _slip(
    book: _NameBook, word: str, near: str, titled: bool, opens: bool, named: bool = False
) -> bool:
    """Whether `word` is a slip for `near` rather than a word or another person: a word in
    the dictionary counts only as two swapped letters ("Kale" for "Kael", not "June" for
    "Jane"); after a title only a surname can be meant ("Miss Gryce" is not "Grace"); a
    sentence's first word only when no dictionary has it; a given name before a surname
    (`named`: "Andrew Bell") is not a slip for a surname ("Andrews")."""
    if is_common_word(word) and (opens or not _transposed(word, near)):
        return False
    if derives_words(word):
        return False  # "a God-fearing earnest Christian" is no "Christina"
    if named and near in book.surnames and near not in book.given:
        return False
    return not (titled and near not in book.surnames)


def _listed_in(book: _NameBook, text: str, match: re.Match[str], listed: set[str]) -> bool:
    """`_listed_with_another`, remembering the word in `listed` when it is."""
    if _listed_with_another(book, text, match):
        listed.add(re.sub(r"[’']s$", "", match.group(0)))
        return True
    return False


def _listed_with_another(book: _NameBook, text: str, match: re.Match[str]) -> bool:
    """Whether the word at MATCH stands in a list beside a capitalised word no card has
    ("of Manson and of Shuman"): one of several people the book names in passing. A
    neighbour on a card ("Jnae and Elizabeth") leaves a slip a slip."""
    after = _LISTED_NEXT.match(text, match.end())
    before = _LISTED_BEFORE.search(text, 0, match.start())
    neighbours = [
        word
        for word in (
            *(after.groups() if after else ()),
            before.group(1) if before and not _opens_sentence(text, before.start()) else None,
        )
        if word is not None
    ]
    return any(
        word not in book.words
        and not is_common_word(word)
        and word.lower() not in STOPWORDS
        and word.lower() not in HONORIFICS
        for word in neighbours
    )


def _opens_sentence(text: str, at: int) -> bool:
    return not text[:at].strip(" “\"‘'(—")


def _names_a_place(text: str, match: re.Match[str], word: str) -> bool:
    """Whether WORD, found where a place stands ("at", "to" before it), names one: a town or
    a country, or a possessive standing alone ("lunch at Henri's.")."""
    alone = word != match.group(0) and _ALONE_AFTER_POSSESSIVE.match(text, match.end())
    return is_place_name(word) or bool(alone)


def name_variants(
    workspace: Workspace, paths: list[str], known: set[str], ignored: list[str] | None = None
) -> list[dict[str, Any]]:
    """Capitalised words one letter away from a name on a card ("Kale" for "Kael"), used at
    most twice, never in lower case, sharing the name's first letter ("Ford" is not
    "Lord"), and not a title, a function word, a plural of a name, an ordinary word, another
    person's title and name, or a spelling the writer listed as intended."""
    book = _NameBook.of(known, ignored or [])
    seen: Counter[str] = Counter()
    where: dict[
        str, list[tuple[str, int, str, bool, bool, bool, bool, str | None, tuple[int, int]]]
    ] = {}
    #: Each file's paragraphs, to read what is said in reply to a speech only when needed.
    paragraphs: dict[str, Sequence[Block]] = {}
    lowercase: set[str] = set()
    #: Words the book lists beside names no card has: someone else's name, wherever used.
    listed: set[str] = set()
    for path in paths:
        doc = read_document(workspace.read_text(path))
        paragraphs[path] = doc.blocks
        speech: dict[int, tuple[tuple[int, int], ...]] = {}
        foreign: dict[int, bool] = {}
        for sentence in doc.sentences:
            if sentence.block not in foreign:
                foreign[sentence.block] = _in_another_language(doc.blocks[sentence.block].text)
            if foreign[sentence.block]:
                continue  # "Mate Gagoal. Reze por minha alma": a letter quoted in Portuguese
            lowercase.update(w.lower() for w in re.findall(r"\b[a-z]+\b", sentence.text))
            for match in _CAPITALISED.finditer(sentence.text):
                if _CLIPPED.match(sentence.text, match.end()):
                    continue  # "Beli' me": dialect, not a name
                opens = _opens_sentence(sentence.text, match.start())
                word = re.sub(r"[’']s$", "", match.group(0))
                titled = bool(_TITLE_BEFORE.search(sentence.text[: match.start()]))
                before = _CAPITALISED_BEFORE.search(sentence.text[: match.start()])
                after = _SURNAME_AFTER.match(sentence.text, match.end())
                named = after is not None
                in_list = not opens and _listed_in(book, sentence.text, match, listed)
                # "the Jeune Amelie", "Molloy Malony", "Madame de Raudon", and at a
                # sentence's start "Louise Vanderkelkov": another name's word; never "Basil
                # Hallwerd" or "Sybil Vane", whose other words are the card's
                other = (
                    (after is not None and after.group(0).strip() not in book.words)
                    or (
                        not opens
                        and bool(
                            (before is not None and before.group(0).strip() not in book.words)
                            or _OF_A_PLACE_AFTER.match(sentence.text, match.end())
                            or _PARTICLE_AFTER.match(sentence.text, match.end())
                            or _PARTICLE_BEFORE.search(sentence.text[: match.start()])
                            or _LATIN_BEFORE.search(sentence.text[: match.start()])
                            or in_list
                            # "three to one at Jena": a town's or a country's name where a place
                            # stands is no slip for "Jane" (the list is read only for such words)
                            or (
                                bool(_PLACE_BEFORE.search(sentence.text[: match.start()]))
                                and _names_a_place(sentence.text, match, word)
                            )
                        )
                    )
                )
                # A sentence's first word may be any capitalised word: counted only where
                # it must be a name, so a slip repeated there still counts as a slip.
                seen[word] += not opens
                block = doc.blocks[sentence.block]
                at = sentence.start + match.start()
                if sentence.block not in speech:
                    speech[sentence.block] = quoted_spans(block.text)
                quote = next(((a, b) for a, b in speech[sentence.block] if a <= at < b), None)
                spoken = block.text[quote[0] : quote[1]] if quote else None
                # where what is said next starts, for a name said wrong and then right
                reply = (sentence.block, quote[1] if quote else -1)
                where.setdefault(word, []).append(
                    (
                        path,
                        block.line_at(at),
                        sentence.text,
                        titled,
                        opens,
                        named,
                        other,
                        spoken,
                        reply,
                    )
                )
    findings = []
    for word, count in sorted(seen.items()):
        lowered = word.lower()
        # A word no dictionary has is a name wherever it stands: "Lollo" opening two
        # sentences and inside a third is used three times, as one means to
        uses = count if is_common_word(word) else len(where[word])
        if (
            word in book.known
            or uses > MAX_VARIANT_USES
            or lowered in lowercase
            or lowered in STOPWORDS
            or lowered.rstrip(".") in HONORIFICS
            or book.intended(word)
        ):
            continue
        near = book.near(word)
        if (
            near
            and len(where[word]) > 1
            and any(re.search(rf"\b{re.escape(near[0])}\b", w[2]) for w in where[word])
        ):
            # "how's Buty? Buty's my brother Bute": a variant used again, and once beside
            # the name itself, is a pet name, not a slip
            continue
        if near and word in listed:
            # "with Mr Greatheart, Apollyon, Christiana, Mercy, and Hopeful": a spelling the
            # book shows to be another person's name is theirs wherever it stands
            continue
        if near and (book.pet_form(word, near[0]) or book.clipped_form(word)):
            # "Mas’r Georgey" for a card's George, "Liza" for a card's Eliza (and its
            # "Lizy"): a name's own pet or short form, where no card spells one otherwise
            continue
        for path, line, text, titled, opens, named, other, spoken, reply in (
            where[word] if near else []
        ):
            if other or not _slip(book, word, near[0], titled, opens, named):
                continue
            if _set_beside(text, word, near[0]):
                # "Jipp--Jopp--what was his name?", "Lucetta--or "Lucette," as she had
                # called herself": the text sets the two side by side on purpose
                continue
            if spoken and _DIALECT.search(spoken) and _vowel_shifted(word, near[0]):
                # "'cud a' dood it. Now thee shalt have Larna'": a dialect speaker's own
                # sound of "Lorna"; in plain speech ("my sister Graca") a slip still
                continue
            if spoken and re.search(
                rf"\b{re.escape(near[0])}\b", _speech_after(paragraphs[path], *reply)
            ):
                # "'… a pinny for Miss Brangwin,' muttered the boy.¶ 'Miss Brangwen!' laughed
                # Miss Harby": said wrong, and said right in the reply
                continue
            if spoken and _stretched(word):
                # "I'll tell you, Carrrie": drawn out in speech; "with Suzannne" in
                # narration is a slip still
                continue
            if (
                _elided(word, near[0])
                or (spoken and _elided(near[0], word))
                or (spoken and _drawled(word, near[0]))
            ):
                # "the Master o’ Ball’ntrae", "“Come, come, Hairry lad,” says he, with a broad
                # accent": the name as it is said; "Hairry" in narration is a slip still. And
                # the other way, in speech: "Masir" said in full for a card's "Mas’r"
                continue
            if spoken and _folksy_ending(word, near[0]):
                # "people like Ezry Stowbody": a name's last "a" said "y" in speech
                continue
            if spoken and _pet_ending_dropped(word, near[0]):
                # "'Fance Day, I mean,' said Bowman": Fancy as her neighbours say it; "Fance"
                # in narration is a slip still
                continue
            findings.append(
                {
                    "type": "name_variant",
                    "path": path,
                    "line": line,
                    "found": word,
                    "expected": near[0],
                    "quote": word,
                    "sentence": text,
                    "message": f"{path}:{line}: '{word}' looks like a misspelling of '{near[0]}'",
                }
            )
    return findings


class ConsistencyChecker:
    name: ClassVar[str] = "consistency_checker"
    #: Reads the workspace: in a worker thread (tools/base.py `Tool`).
    slow: ClassVar[bool] = True
    description: ClassVar[str] = "Find canon contradictions and name variants across scenes"
    args_model: ClassVar[type[ToolArgs]] = ConsistencyCheckerArgs

    def run(self, args: ConsistencyCheckerArgs, workspace: Workspace) -> ToolResult:
        if not args.scene_paths:
            raise ToolError(self.name, "no scene or chapter files to check: nothing was found")
        cards = load_cards(workspace, args.canon_paths)
        report = check_scenes(workspace, cards, args.scene_paths, args.narrator)
        _, intended = workspace_settings(workspace)
        findings: list[dict[str, Any]] = [
            {"type": "canon_conflict", "message": c.describe(), **c.as_dict()}
            for c in report.conflicts
        ]
        known = {t for name in report.cast.owner for t in name.split()} | set(report.cast.owner)
        findings.extend(
            name_variants(workspace, args.scene_paths, known, [*intended, *args.ignore_names])
        )
        rows = report.fact_rows()
        output: dict[str, Any] = {
            "scenes_checked": list(args.scene_paths),
            "findings": findings,
            "finding_count": len(findings),
            "facts": rows,
            "unchecked": [r for r in rows if not r["checked"]],
            # What a writer must be told was not checked: descriptions, not bookkeeping.
            "unchecked_descriptions": [
                r for r in rows if not r["checked"] and describes_the_person(r["attribute"])
            ],
            # "Tom Brangwen", father and son: nothing said of the name was checked, and why
            "names_read_as_neither": [
                {"name": name, "also_begins": longer}
                for name, longer in sorted(report.cast.shared.items())
            ],
            "pass": not findings,
        }
        variants = [f"! {f['message']}" for f in findings if f["type"] == "name_variant"]
        summary = (
            f"Checked {len(args.scene_paths)} {detect_layout(workspace).unit}s: "
            f"{len(findings)} finding(s)\n"
            + canon_digest(cards, report)
            + ("\n" + "\n".join(variants) if variants else "")
        )
        return ToolResult(output, summary)
