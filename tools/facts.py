"""Checking canon facts against the text: who a description belongs to, and what it says.

Precision before recall. A value counts only where it describes its noun ("his green eyes",
"her hair was gold", "her hair nearly black", "Basil was tall"), never where a colour word
merely stands nearby ("his eye fell on the yellow book") or belongs to a name ("Dorian
Gray"). A description is pinned on someone only through a possessive name ("Kael's eyes"),
"the eyes of Kael", a subject in the same clause, or a pronoun with one candidate: "he",
"she", "his", "her" a person named in the same paragraph, at most four sentences back (in
speech, named in that speech); "I", "my" the narrator, or in speech its one speaker; "you",
"your" in speech the one person it addresses (`voices.py`). Negation narrows height and
handedness ("not tall": middle height or short) and silences colours ("not blue"); wishes,
comparisons and conditions ("I desired to be tall", "as tall as I am", "would be tall")
state nothing. "small", "little" and "middle" are heights only where nothing else can be
meant ("I was very little", "of middle height").
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controlroom.tools.canon import (
    HONORIFICS,
    SAINT_TITLES,
    TITLED_NAME,
    Cast,
    Fact,
    Gender,
    names_a_thing,
)
from controlroom.tools.text import Document, inside, read_document
from controlroom.tools.vocabulary import (
    EYES,
    HAIR,
    HANDEDNESS,
    HEIGHT,
    KINDS,
    NEGATIONS,
    PREDICATE_WORDS,
    STATURE_NOUNS,
    WEAK_HEIGHT_WORDS,
    FactKind,
    checkability,
)
from controlroom.tools.voices import (
    FIRST_PERSON,
    SECOND_PERSON,
    SPEECH_VERBS,
    Voices,
    sections,
    untagged_speech,
    voices_of,
)
from controlroom.tools.wordlist import is_common_word, is_given_name

_WORD = re.compile(r"[A-Za-z]+(?:[-'’][A-Za-z]+)*")
_CLAUSE_BREAK = re.compile(r"[.;:!?()“”\"—–]|--")
_SINGLE_QUOTES = re.compile("[‘’']")
#: Inside one sentence a full stop ends an abbreviation ("Mr. Darcy"), not a clause.
_CLAUSE_SEPARATOR = re.compile(r"[;:!?()“”\"—–]|--")
_COPULAS = frozenset(
    "was were is are am be been seemed seems looked looks grew grown turned became become "
    "appeared appears stood remained".split()
)
#: A subject and its verb in one word: "You're not grown so very tall".
_SUBJECT_COPULAS = frozenset("i'm you're he's she's we're they're".split())
_ADVERBS = frozenset(
    "very quite rather so too still almost nearly now always extremely remarkably unusually "
    "singularly strangely wonderfully somewhat a an of the deepest deep palest bright clear "
    "all but already".split()
)
_SHADES = frozenset("dark light pale deep bright".split())
_NEGATIONS = NEGATIONS
#: Wishes, conditions and comparisons: what follows is not said to be so.
_HEDGES = frozenset(
    "desired wished wish wishes wanted want wants hoped hope longed would could might "
    "should if unless whether as than".split()
)
# "they" and "their" are one person's only where a card says so: "their letters were short"
# is no one's height.
_POSSESSIVES: dict[str, Gender | None] = {"his": "he", "her": "she", "their": "they"}
#: The possessives that stand alone: "those eyes of hers".
_INDEPENDENT_POSSESSIVES: dict[str, Gender] = {"his": "he", "hers": "she"}
_SUBJECTS: dict[str, Gender | None] = {"he": "he", "she": "she", "they": "they"}
_SUBJECT_LINKS = frozenset("with had has have having".split())
#: Words that make what follows a wish or a supposition: "How I wished that I had blue eyes".
_WISHES = frozenset(
    "wish wished wishes wishing longed yearned if unless supposing suppose whether "
    # claims and fancies: "Phineas had declared at Killaloe that Lady Laura was six feet
    # high … She was in fact about five feet seven"
    "declared asserted swore sworn pretended fancied imagined alleged boasted claimed "
    "maintained insisted protested".split()
)
#: How many words back in its clause a wish may stand: "How I wished, that evening, that I
#: had blue eyes and golden hair".
_WISH_WORDS_BACK = 12
#: "above the middle height", "below the common height".
_RELATIVE_HEIGHT = {
    "above": "tall",
    "over": "tall",
    "below": "short",
    "under": "short",
    "beneath": "short",
}
_HEIGHT_NORMS = frozenset("middle common ordinary average usual medium".split())
#: Values that are nouns of their own: "a natural left-hander".
_VALUE_NOUNS = frozenset("left-hander right-hander southpaw".split())
_NUMBERS = {
    w: n
    for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}
#: The heights in feet a person is told to stand: "one foot" and "twelve feet" are not.
_FEET_OF_A_PERSON = (3, 8)
#: What may follow a height in feet: "six feet tall", "six feet in his stockings".
_HEIGHT_CLOSERS = frozenset("tall high in and".split())
#: Colours a head takes from its hair ("fair-headed"); never "light" ("light-headed") or a
#: metal ("gold-headed", a cane's).
_HEAD_COLOURS = frozenset(
    "red fair white grey gray black dark flaxen sandy carroty tow yellow".split()
)
_AGE_WORDS = frozenset("young old little big great tall small".split())
#: Not person nouns, yet said of people: "a fair-headed young giant", "a red-headed thing".
_HEADED_BEINGS = frozenset("giant creature one thing".split())
#: "grown grey", "going grey": hair, said of a person.
_GREYING_VERBS = frozenset("grown gone going growing".split())
_GREY_WORDS = frozenset("grey gray silver grizzled".split())
#: What follows "gone grey" when it is not the hair: "gone grey eyes", "had gone grey lips".
_NOT_HAIR_AFTER_GREY = frozenset({"face", "cheeks", "lips", "skin"})
_GREYING_ADVERBS = frozenset("already quite now long since early much very all".split())
_GREYING_AUXILIARIES = frozenset("had has have having is was are were be been being 'd".split())
#: Words between a verb and a height in feet: "stood well over six feet", "was but five".
_MEASURE_ADVERBS = frozenset(
    "well over above under below nearly almost about full fully quite just all a good but "
    "only barely scarcely hardly not much more less than some at least to up fairly of "
    "upwards upward nigh near on every inch inches little trifle bit something".split()
)
#: What a height in feet follows when it measures its subject: "stood six feet", "was
#: six feet", "being but five feet four", "had shot up to six feet", "measured six feet".
_STATURE_VERBS = frozenset(
    "was is are were be been being am stood stands stand standing measured measures "
    "measuring grew grown shot reached reaching topped height looked looks seemed seems "
    "appeared".split()
)
_TOWERING = frozenset(["towered"])
#: Words that may follow a colour without making it another noun's: "black as jet",
#: "grey like a winter sea", "brown now", "red enough", "blue still".
_VALUE_FOLLOWERS = frozenset(
    "as like than now still then too again once enough yet indeed already either though "
    "that which who when where while if but or nor so".split()
)
#: Words after a noun that close its phrase: "were red and yellow leaves which had come".
_PHRASE_ENDERS = frozenset("which that who where when and or but of from in on".split())
#: How far a second predicate "and of a … <value>" may stand after the verb.
_COORDINATED_OF_REACH = 6
#: What the hair shows beneath: "the hair beneath his hat was white".
_HEADWEAR = frozenset("hat cap bonnet wig hood turban helmet bonnets hats caps".split())
#: Verbs of turning one's eyes on someone: "She turned upon him a pair of dark eyes".
_GAZE_VERBS = frozenset("turned fixed raised lifted bent cast directed rolled".split())
#: Looking at someone: "looking up at Tito with wide blue eyes" are the looker's eyes.
_LOOKING = frozenset(
    "looking looked gazing gazed staring stared glancing glanced peering peered smiling "
    "smiled".split()
)
#: What one looks out of or with is one's own: "looked at me out of his grey eyes".
_LOOKING_THROUGH = re.compile(r"\b(?:out\s+of|with|from\s+under)\s+$", re.IGNORECASE)
#: What a relative clause calls the hand someone uses: "which was always her readiest".
_READIEST = frozenset("readiest best better stronger favourite favorite".split())
#: A sentence that names the one already in view: "This was no other than Captain Dobbin",
#: "The man was Sergeant Troy", "It was Mr. Shuan".
_IDENTIFYING = re.compile(
    r"(?:^|[.!?]\s+|[;:—–]\s*|--\s*)(?:This|That|It|[Ss]uch|(?:His|Her)\s+name|"
    r"The\s+(?:man|woman|gentleman|lady|stranger|figure|newcomer|visitor|girl|boy|youth|"
    r"fellow|lad|new\s+arrival))\s+(?:was|is|proved\s+to\s+be|turned\s+out\s+to\s+be)\s+"
    r"(?:no\s+other\s+than\s+|none\s+other\s+than\s+|no\s+less\s+a\s+person\s+than\s+)?$"
)
_IDENTIFYING_REACH = 60
#: How a paragraph that names the one in view opens (a quick test before `_IDENTIFYING`).
_OPENS_NAMING = re.compile(r"\s*(?:This|That|It|Such|His|Her|The)\b")
#: "So Solomon, holding his", "Old Solomon, in his": a name, a comma and a participle or
#: "in"/"with" opening the phrase a pronoun stands in.
_NAME_AND_PARTICIPLE = re.compile(r"\b([A-Z][a-z]+),?\s+(?:\w+ing|in|with)\b[^,.;:!?]*,?\s*$")
#: A name set off by commas before a run of participle phrases: "Norton, smarting under …,
#: clutching his chair …, ".
_NAME_AND_PARTICIPLES = re.compile(r"\b([A-Z][a-z]+),\s+(?:\w+ing\b[^,.;:!?]*,\s*){1,3}$")
#: Kin a feature is had from: "Tom has his father's brown eyes".
_KIN = frozenset(
    "father mother brother sister uncle aunt grandfather grandmother papa mamma mama family".split()
)
_HAVING = frozenset("has had have having inherited got".split())
#: People named by whose they are: "Mrs. Orchard's baby", "Jane's husband".
_RELATIONS = frozenset(
    "baby son sons daughter daughters wife husband child children nephew niece cousin friend "
    "servant maid nurse sweetheart lover brothers sisters eldest youngest".split()
)
#: Colours a head takes from its hair before the noun: "his grizzled head".
_HEAD_HAIR_COLOURS = _HEAD_COLOURS - {"tow", "yellow"} | {"grizzled", "hoary", "golden", "auburn"}
#: Words that put a state in the past: "which had once been black".
_FORMERLY = frozenset("once formerly originally then".split())
#: Height said by idiom rather than by an adjective (`_Context._height_idiom`).
#: "of great height", "a man of small stature": what an adjective before a stature noun
#: after "of" says.
_STATURE_ADJECTIVES = {
    **dict.fromkeys(
        "great unusual uncommon considerable remarkable lofty gigantic extraordinary "
        "immense goodly commanding".split(),
        "tall",
    ),
    **dict.fromkeys(
        "low small smallish short little diminutive dwarfish stunted puny".split(), "short"
    ),
}
#: "came scarcely to his shoulder": where a shorter person's head comes on a taller one.
_REACHED_PARTS = frozenset("shoulder shoulders chin waist breast chest armpit elbow".split())
_COMING = frozenset("came come comes coming".split())
_REACHING = frozenset("reached reach reaches reaching".split())
#: Words that make coming up to a part a measure of stature, not a walk towards it.
_BARELY = frozenset("scarcely barely hardly only just not much above no higher".split())
#: "a giant of a man", "a dwarf of a fellow".
_SIZE_NOUNS = {"giant": "tall", "dwarf": "short"}
#: "less than the middle height", "more than the common size".
_LESS_MORE = {"less": "short", "more": "tall"}
#: What follows the "of" of "of great stature", "of a smallish stature".
_AFTER_STATURE_OF = frozenset(_STATURE_ADJECTIVES) | {"a", "an"}
#: The words a height idiom opens with.
_IDIOM_OPENERS = (
    frozenset({"of", "head", "taller"}) | _COMING | _REACHING | set(_SIZE_NOUNS) | set(_LESS_MORE)
)
#: Words that may follow an adverb closing its deed: "cut the bread left-handed, as …".
_AFTER_A_DEED = frozenset("and as like with when because for since from".split())
#: Words that make a hand's use a habit: "as always", "for he used no other".
_HABITUAL = frozenset(
    "always ever invariably habitually habit wont naturally other custom trick favoured "
    "favored preferred everything usually generally commonly".split()
)
_HABIT_WORDS = 8
#: What a hand may be called between its owner and its side: "his long left hand".
_HAND_ADJECTIVES = frozenset("long thin lean big great small little white brown strong".split())
#: Why someone may use the other hand for once.
_HURT = frozenset("sling hurt injured wounded broken bandaged lame sprained".split())
#: A hurt to these leaves both hands free: "held the wounded toe in his left hand".
_NOT_A_HAND = frozenset(
    "toe toes foot feet leg legs knee knees ankle ankles heel head eye nose cheek lip back "
    "pride feelings heart".split()
)
#: Pronouns that stand for a feature named before them: "her hair … it was red".
_FEATURE_PRONOUNS = {"it": HAIR, "they": EYES}
#: The longest relative clause between a feature and its verb: "her hair, which she wore
#: without a cap, was".
_RELATIVE_WORDS = 8
#: The longest apposition between a name and its verb: "Lady Constance, the elder, was".
_APPOSITION_WORDS = 4
#: The longest relative clause between a subject and its verb that a walk back passes.
_RELATIVE_SKIP = 12
#: Words an aside after a feature may hold: "her eyes—large, grave, and of the clearest grey—".
_ASIDE_LINKS = frozenset("and of the a".split())
_PRONOUN_VALUE_WORDS = 5
_FEATURE_VERBS = frozenset("had fell hung curled lay grew".split())
#: What holds for now after a word ("short enough myself at present"), a few words on.
_FOR_NOW = re.compile(
    r"^(?:\W+\w+){0,3}?\W+(?:at\s+present|just\s+now|for\s+the\s+(?:present|moment)|"
    r"this\s+(?:week|month|quarter)|"
    # "I was little for fourteen years": a stretch of time past, a childhood
    # ("tall for his years" is a stature still)
    r"for\s+(?:(?:many|some|several|a\s+few|[a-z]+teen|[a-z]+ty|one|two|three|four|five|six|"
    r"seven|eight|nine|ten|eleven|twelve|\d+)\s+(?:years|months|weeks|days)|a\s+long\s+time|ages))\b",
    re.IGNORECASE,
)
#: A clause of time past before a word: "when I was quite a", "when she was a very", "from
#: the time she was a".
_WHEN_IT_WAS = re.compile(
    r"\b(?:[Ww]hen|[Ss]ince|[Ww]hile|(?:[Ff]rom|[Ss]ince)\s+the\s+time(?:\s+that)?)\s+"
    r"(?:I|he|she|we|they|you|[A-Z][a-z]+)\s+(?:was|were)\b(?:\s+\w+){0,3}\s+$"
)
#: Verbs "short" completes as a manner, not a height: "cut short", "stopped short".
_STOPPED_SHORT = frozenset(
    "cut cuts cutting stop stops stopped stopping fell fall falls falling fallen came come "
    "comes coming pulled pull pulls pulling brought bring drew draw run ran".split()
)
#: Words of place after an adjective: "a little behind", "a little way".
_PLACE_WORDS = frozenset(
    "behind before after above below beyond near beside among between within across along "
    "past over under into onto upon toward towards ahead apart away way off aside".split()
)
_REFLEXIVES = frozenset("herself himself themselves myself yourself ourselves".split())
#: Verbs whose subject looks at or judges someone else ("Emma particularly admired").
_PERCEPTION_VERBS = frozenset(
    "admired admire admires saw see sees watched watch watches noticed observed thought felt "
    "feel feels perceived gazed looked beheld fancied considered remembered liked loved "
    "wondered found discern discerned descried espied perceive recognised recognized "
    "judged guessed heard hear hears".split()
)
#: Words that may stand between a perceiver and the verb: "Emma could not but feel".
_PERCEIVER_FILLERS = frozenset(
    "could would might did had has was not but only still particularly always often never "
    "then now also quite".split()
)
_PERCEIVER_WORDS = 4
_PERCEIVER_REACH = 60
_QUESTION_END = re.compile(r"[.!?;:“”\"]")
_PHRASE_MODIFIER_BLOCKERS = frozenset(
    "the a an his her their its my your our on at to into upon onto towards toward from in of "
    "by for over under through was were is are had has have fell rested turned looked and "
    "with whose".split()
)
#: Nouns a height word may describe attributively: "a tall gentleman", "a short man".
_PERSON_NOUNS = frozenset(
    "man men woman women gentleman gentlemen lady ladies girl boy fellow person figure child "
    "creature youth lad lass maiden sailor seaman soldier officer doctor lawyer clerk servant "
    "stranger farmer maid widow priest parson merchant traveller visitor personage thing "
    "scrap".split()
)
_SUPERLATIVES = frozenset("tallest shortest".split())
#: What makes "little" fondness or scorn, not size: "a silly little thing".
_FOND_OR_SCORNFUL = frozenset(
    "silly poor dear sweet pretty foolish stupid naughty wretched good nice funny odd queer "
    "clever vain proud timid brave merry wicked helpless darling precious tiresome "
    "charming interesting delightful lovely dainty".split()
)
#: A name after one of these is spoken to, of or with: no subject.
_NAMED_AS_OBJECT = re.compile(r"\b(?:to|with|at|for|from|of|by|on|upon)\s+$", re.IGNORECASE)
#: A preposition just before a name: the name is where, or with whom, not who.
_PREPOSITION_BEFORE = re.compile(
    r"\b(?:behind|beside|before|after|with|near|among|amongst|beyond|upon|under|over|"
    r"round|around|against|towards?|past|between|opposite|inside|outside|within|beneath)"
    r"\s+(?:the\s+)?$",
    re.IGNORECASE,
)
#: Verbs of how one looks: a height said with them is an impression beside others.
_APPEARING = frozenset("looked looks seemed seems appeared appears".split())
#: Words that count hairs one by one: "her one grey hair", "a few white hairs".
_COUNTED = frozenset("one single few two three several stray first".split())
#: "taller than any man in the parish": a comparison with everyone is a superlative.
_COMPARATIVES = {"taller": "tall", "shorter": "short"}
_EVERYONE = frozenset("any anyone anybody all every everyone everybody most other others".split())
#: What may open a sentence before a fronted height or colour word, or join it to the
#: next one: "Very tall and gaunt, Silas stood at the door".
_FRONTED_FILLERS = frozenset(
    "very so too rather quite extremely exceedingly remarkably unusually uncommonly and "
    "but yet though".split()
)
#: Words no fronted adjective phrase holds: it has no article, possessive, preposition or
#: verb of saying ("Tall trees lined the road, Silas said" is no one's height).
_NOT_IN_A_FRONTED_PHRASE = frozenset(
    "a an the his her their its my your our this that these those of in on at to with by "
    "from for said says was were is are had has have".split()
)
#: Verbs of an aside that tells who thinks what: "Tall grasses, Silas thought, hid it".
_THINKING = frozenset(
    "thought thinks knew knows felt feels supposed supposes believed believes reflected "
    "fancied fancies saw sees noticed noticed observed observes remembered".split()
)
#: Words a fronted phrase may run to before its comma.
_FRONTED_WORDS_MAX = 4
#: How far a fronted list of describing words may run: "Tall, thin, red-haired, and
#: well-favored, he was".
_FRONTED_LIST_MAX = 8
_STRUCK = frozenset("struck strikes impressed impresses".split())
#: How many words back from "with" or "had" its subject may stand: "Dora is nineteen, of
#: the middle height, with dark-brown hair".
_SUBJECT_REACH = 8
#: A teller's asides between commas, passed over on the way back to a subject.
_ASIDE_WORDS_SET = frozenset(
    "in fact indeed perhaps i think believe suppose fancy dare say am must confess own it "
    "seems is true should would bound to admit".split()
)
_ASIDE_WORDS_MAX = 5
#: How far an opening participle's phrase may run before its subject: "Being but five feet
#: four, and stout, I".
_OPENING_WORDS = 12
_MODALS = frozenset("must does do will would should can could may might".split())
_HANDS = frozenset(
    "left-handed right-handed left-hander right-hander southpaw ambidextrous".split()
)
#: Nouns of grown people: "a little old gentleman" is a short one.
_GROWN_NOUNS = frozenset("man woman gentleman lady personage".split())
_INTENSIFIERS = frozenset("very so remarkably exceedingly extremely".split())
_OBJECT_PRONOUNS = frozenset("me him her us them".split())
_ATTRIBUTIVE_POSSESSIVES = frozenset("his her my your".split())
#: The gender a person noun gives "this" in "This was a hearty … gentleman".
_NOUN_GENDERS: dict[str, Gender] = {
    **dict.fromkeys(
        "man gentleman boy fellow lad youth sailor seaman soldier priest parson".split(), "he"
    ),
    **dict.fromkeys("woman lady girl lass maiden maid widow".split(), "she"),
}
#: Adjectives passed over inside "a sturdy straw-haired man".
_ATTRIBUTIVE_ADJECTIVES_MAX = 2
#: Words a walk back to a predicate's subject passes: "he was, and who … young man".
_SUBJECT_WALK_WORDS = frozenset(
    "who and young man woman to me though although herself himself myself".split()
)
_DASH = re.compile(r"--|—|–")
#: The longest aside between dashes a walk back to a subject passes over.
_ASIDE_WORDS = 16
#: How far back a list of features may run to its "with": "with the strong jaw and the
#: good forehead and the brown eyes".
_FEATURE_LIST_WORDS = 10
#: Nouns that measure hair: "a shock of ginger hair".
_QUANTITY_NOUNS = frozenset(
    "shock mop mass masses head crop tangle mane thatch bob shag fringe deal quantity abundance "
    "wealth profusion cloud pair cable coil coils braid braids plait plaits knot lock locks tress "
    "tresses tuft clump wisp wisps strand strands bush".split()
)
#: The body and its features, as the first item of a list a possessive opens ("his tall
#: figure, long and dark locks").
_FIGURE_NOUNS = frozenset(
    "figure form frame face features complexion brow forehead nose mouth lips cheeks skin chin "
    "jaw shoulders head build stature lineaments".split()
)
#: What hair that opens its sentence does to a head it grows on: "A bush of crinkly yellow
#: hair topped his red, freckled face", "Grey locks fell about her temples".
_CROWNING_VERBS = frozenset(
    "topped crowned framed fringed shaded covered hung fell curled clustered tumbled waved "
    "straggled streamed strayed".split()
)
_CROWNING_PARTICLES = frozenset("over about upon on round around down across".split())
_HEAD_PARTS = frozenset(
    "face head brow brows forehead temples shoulders neck cheeks ears crown scalp".split()
)
#: Adjectives joined to a predicate by "and" or commas: "was thin, pale and tall".
_COORDINATED_MAX = 2
#: How many words a comma list of predicates may span back to its head.
_LIST_WORDS_MAX = 10
#: Words that show a comma list is not one subject's list of predicates.
_LIST_STOPPERS = frozenset(
    "he she i you they we it him her them me us his my your their who whom which that when "
    "while as because though although but if had has have having said says whose".split()
)
_ALL_CUES = frozenset(cue for kind in KINDS for cue in kind.cues)
#: How far back in its paragraph a pronoun looks for its one candidate: "the wretch ...
#: His limbs were in proportion. Beautiful! Great God! His yellow skin ...; his hair".
_SENTENCES_BACK = 4
#: How many paragraphs back a pronoun that opens a paragraph looks for its person.
_PARAGRAPHS_BACK = 2
#: Words a predicate value may follow after "of a": "his hair was of a lustrous black".
_VALUE_QUALIFIERS_MAX = 2


@dataclass(frozen=True)
class Conflict:
    entity: str
    attribute: str
    canon_value: str
    found: str
    path: str
    line: int
    sentence: str
    quote: str = ""
    #: Where the value it is measured against stands: a card ("canon"), or, where no card
    #: states the attribute, the passage of the text that states it first (`path:line`).
    against: str = "canon"

    def as_dict(self) -> dict[str, Any]:
        return {
            "entity": self.entity,
            "attribute": self.attribute,
            "canon_value": self.canon_value,
            "found": self.found,
            "path": self.path,
            "line": self.line,
            "sentence": self.sentence,
            "quote": self.quote,
            "against": self.against,
        }

    def describe(self) -> str:
        # "Marian's eyes are 'black'", "her hair is 'red'"
        verb = "are" if self.attribute == "eyes" else "is"
        if self.against != "canon":
            return (
                f"{self.path}:{self.line}: {self.entity}'s {self.attribute} {verb} "
                f"'{self.found}' but {self.against} says '{self.canon_value}' (no card states "
                f"it; in “{self.quote}”)"
            )
        return (
            f"{self.path}:{self.line}: {self.entity}'s {self.attribute} {verb} "
            f"'{self.found}' but canon says '{self.canon_value}' (in “{self.quote}”)"
        )


@dataclass(frozen=True)
class Statement:
    """One description found in the text: who, which attribute, which classes, where."""

    entity: str
    kind: FactKind
    words: str
    classes: frozenset[str]
    line: int
    sentence: str
    quote: str


@dataclass(frozen=True, slots=True)
class _Tok:
    start: int
    end: int
    text: str
    #: The word lower-cased with curly apostrophes straightened, the form every lookup
    #: uses: computed once per token (it was recomputed at each of a dozen lookups).
    low: str

    @classmethod
    def of(cls, start: int, end: int, text: str) -> _Tok:
        return cls(start, end, text, text.lower().replace("’", "'"))


_Found = tuple[str, FactKind, str, frozenset[str], int, int, int]


class _Reader:
    """Walks one document's paragraphs, keeping who was named recently in each."""

    def __init__(self, doc: Document, cast: Cast, narrator: str | None) -> None:
        self.doc = doc
        self.cast = cast
        self.narrator = narrator

    def _named_as_in_view(self, block_index: int) -> str | None:
        """Who the paragraph at `block_index` opens by naming as the one already in view
        ("This was no other than Captain William Dobbin, …"), if it does."""
        if block_index >= len(self.doc.blocks):
            return None
        text = self.doc.blocks[block_index].text
        if not _OPENS_NAMING.match(text):
            return None  # most paragraphs: decided before the names are looked for
        for start, _, entity in _people(self.cast, text[: _IDENTIFYING_REACH * 2]):
            if _IDENTIFYING.search(text[:start]) and not entity.startswith(_STRANGER):
                return entity
            return None
        return None

    def statements(self) -> list[Statement]:
        found: list[Statement] = []
        by_block: dict[int, list[int]] = {}
        for index, sentence in enumerate(self.doc.sentences):
            by_block.setdefault(sentence.block, []).append(index)
        written = sections(self.doc, self.cast)
        #: Who each earlier paragraph named in its narration, the nearest last.
        named_before: deque[frozenset[str]] = deque(maxlen=_PARAGRAPHS_BACK)
        #: Who spoke each paragraph of the exchange running up to this one (None: unknown).
        turns: list[str | None] = []
        #: The one the previous paragraph's last sentence opens on, as its subject.
        closing_subject: str | None = None
        #: Whether the previous paragraph ended leading into speech ("he went on:").
        lead_in = False
        for block_index, indexes in by_block.items():
            block = self.doc.blocks[block_index]
            block_mentions = _people(self.cast, block.text)
            voices = voices_of(
                block,
                block_mentions,
                self.cast,
                self.narrator,
                written.get(block_index),
            )
            if (
                voices.speaker is None
                and turns
                and turns[-1] is not None
                and lead_in
                and untagged_speech(block.text, voices.quotes)
            ):
                # "… seating himself on an ottoman, he went on:¶“My brother and I were
                # twins …”": a paragraph that ends leading into speech gives it its speaker
                voices = voices.spoken_by(turns[-1])
            elif (
                voices.speaker is None
                and len(turns) >= 2
                and turns[-2] is not None
                and turns[-1] is not None
                and turns[-2] != turns[-1]
                and untagged_speech(block.text, voices.quotes)
            ):
                # "“Ten years.”" after two tagged turns: a two-person exchange goes on, so
                # the one who spoke two paragraphs back speaks, to the one who spoke last.
                voices = voices.taking_turn(turns[-2], turns[-1])
            turns = [*turns, voices.speaker] if voices.quotes else []
            lead_in = _LEADS_INTO_SPEECH.search(block.text) is not None and not inside(
                voices.quotes, len(block.text.rstrip()) - 1
            )
            told = [(s, entity) for s, _, entity in block_mentions if not inside(voices.quotes, s)]
            earlier = tuple(reversed(named_before))
            named = frozenset(entity for _, entity in told if entity != self.narrator)
            if named_before and _opens_on_pronoun(block.text, voices.quotes, told):
                # "I say that she took no color … as in Lady Audley's boudoir": a paragraph
                # about someone carried over keeps them in play beside whom it names
                named |= named_before[-1]
            if (
                voices.quotes
                and voices.speaker is None
                and untagged_speech(block.text, voices.quotes)
            ):
                # "“Well, don't go and make a piece of work …”" untagged, and nobody can tell
                # who says it: the next paragraph's "During this speech she …" may be them
                named |= {_STRANGER}
            named_before.append(
                named
                | _spoken_of(block.text, voices.quotes)
                | _fronted_subjects(block.text, block_mentions, voices.quotes)
                | _unnamed_subjects(block.text, voices.quotes)
            )
            history: list[tuple[list[tuple[int, int, str]], int, int]] = []
            named_next = self._named_as_in_view(block_index + 1)  # once a paragraph
            for index in indexes:
                sentence = self.doc.sentences[index]
                mentions = [
                    (sentence.start + s, sentence.start + e, entity)
                    for s, e, entity in _people(self.cast, sentence.text)
                ]
                context = _Context(
                    block.text,
                    voices,
                    mentions,
                    history,
                    self.cast,
                    told,
                    earlier,
                    named_next,
                    closing_subject,
                )
                for statement in context.read(sentence.start, sentence.end):
                    if statement[0].startswith(_STRANGER):
                        continue  # said of someone without a card: nothing to check
                    found.append(
                        Statement(
                            statement[0],
                            statement[1],
                            statement[2],
                            statement[3],
                            block.line_at(statement[4]),
                            sentence.text,
                            block.text[statement[5] : statement[6]],
                        )
                    )
                history.append((mentions, sentence.start, sentence.end))
            if history:
                named_before[-1] |= context.second_persons()
            closing_subject = _closing_subject(block.text, history, voices.quotes)
        return found


@dataclass
class _Context:
    text: str
    voices: Voices
    mentions: list[tuple[int, int, str]]
    #: The paragraph's sentences before this one: who each named, where it starts and ends.
    history: list[tuple[list[tuple[int, int, str]], int, int]]
    cast: Cast
    #: (offset, entity) of each name in this paragraph's narration.
    told: list[tuple[int, str]]
    #: Who the paragraphs before this one named in their narration, the nearest first.
    earlier: tuple[frozenset[str], ...]
    #: Whom the next paragraph opens by naming as the one in view ("This was no other
    #: than Captain William Dobbin"), if anyone.
    named_next: str | None = None
    #: Whom the previous paragraph's last sentence opens on as its subject, if anyone
    #: ("And Nancy was a queer girl; …"): the likeliest "she" of the next paragraph.
    closing_subject: str | None = None

    @property
    def quotes(self) -> tuple[tuple[int, int], ...]:
        return self.voices.quotes

    def read(self, start: int, end: int) -> list[_Found]:
        tokens = [
            _Tok.of(start + m.start(), start + m.end(), m.group(0))
            for m in _WORD.finditer(self.text[start:end])
        ]
        self.first = start
        self.sentence_start = start
        self.sentence_end = end
        out: list[_Found] = []
        for i, tok in enumerate(tokens):
            for kind in KINDS:
                if tok.low in kind.cues:
                    hit = self._noun_phrase(tokens, i, kind)
                    if hit:
                        out.append(hit)
            compound = (
                next((k for k in KINDS for s in k.suffixes if tok.low.endswith("-" + s)), None)
                if "-" in tok.low  # only "grey-eyed" and its like can be one
                else None
            )
            if compound is not None and self._plain(tok):
                classes = compound.classes(tok.low.rsplit("-", 1)[0])
                owner, negated = self._subject_of(tokens, i)
                if classes and owner and not negated:
                    out.append((owner, compound, tok.low, classes, tok.start, tok.start, tok.end))
            elif tok.low.endswith("-headed") and self._plain(tok):
                out.extend(self._headed(tokens, i))
            elif tok.low == "head" and i > 1:
                head = self._coloured_head(tokens, i)
                if head is not None:
                    out.append(head)
            predicate = PREDICATE_WORDS.get(tok.low)
            if tok.low in _COMPARATIVES and self._beyond_everyone(tokens, i):
                predicate = HEIGHT
            if (
                predicate is not None
                and self._plain(tok)
                and not self._ranked_among_few(tok)
                and self._about_stature(tokens, i)
                and not self._before_own_cue(tokens, i, predicate)
                and not self._short_for_a_name(tokens, i)
            ):
                owner, negated = self._subject_of(tokens, i)
                if owner is None and not negated and predicate is HANDEDNESS:
                    owner = self._doer(tokens, i)
                if owner is None and not negated:
                    owner = self._form_that_of(tokens, i) or self._as_appeared(tokens, i)
                if owner:
                    classes = predicate.classes(_COMPARATIVES.get(tok.low, tok.low))
                    words = tok.low
                    if negated and tok.low == "little":
                        # "he was not a little, fussy man": petty as often as small, so
                        # denied it says nothing of a height
                        classes = frozenset()
                    elif negated:
                        classes, words = predicate.negated(classes), f"not {tok.low}"
                    if classes:
                        out.append(
                            (owner, predicate, words, classes, tok.start, tok.start, tok.end)
                        )
            out.extend(self._told_otherwise(tokens, i))
        return [
            found
            for found in out
            if not self._asked_or_wished(tokens, found[5])
            and not self._dark_with_feeling(found)
            and not self._bruised(found)
        ]

    def _ranked_among_few(self, tok: _Tok) -> bool:
        """ "two pretty girls, of whom Bell was the tallest", "Of the two, Tom was the
        tallest": a superlative ranking one of a pair or of those just named says who is
        taller, not how tall (both sisters were "something below the usual height")."""
        if tok.low not in _SUPERLATIVES:
            return False
        sentence = self.text[self.sentence_start : self.sentence_end]
        before = self.text[self.sentence_start : tok.start]
        return bool(_OF_WHOM.search(before) or _OF_THE_TWO.search(sentence))

    def _bruised(self, found: _Found) -> bool:
        """ "black eyes and bloody noses became quite the order of the day": eyes blacked in
        a fight, told beside the other hurts, are no one's colour of eyes."""
        if found[1] is not EYES:
            return False
        return bool(
            _HURTS_AFTER.match(self.text, found[6])
            or _HURTS_BEFORE.search(self.text, max(0, found[4] - 40), found[4])
        )

    def _dark_with_feeling(self, found: _Found) -> bool:
        """ "His eyes were dark and shining", "her dark, wondering eyes", "eyes dark with
        pain": eyes darkened by what is felt (Lawrence's way with eyes of any colour), not
        their colour."""
        if found[1] is not EYES or found[2] != "dark":
            return False
        value_start = found[4]  # where the value's word stands
        if self.text[value_start : value_start + 4].lower() != "dark":
            return False
        return _DARK_WITH_FEELING.match(self.text, value_start + 4) is not None

    def _form_that_of(self, tokens: list[_Tok], i: int) -> str | None:
        """ "The tall form was that of Gabriel Oak": a figure first seen, then named, is the
        named person's; only where the sentence opens on it and nothing stands between."""
        if not 1 <= i <= 3 or tokens[0].low not in ("the", "a"):
            return None  # "the" must open the sentence: "Bob saw the tall form …" is Bob's view
        k = i + 1
        while k < len(tokens) and k - i <= 3 and tokens[k].low not in _FORM_NOUNS:
            k += 1
        if k + 4 >= len(tokens) or tokens[k].low not in _FORM_NOUNS:
            return None
        if [t.low for t in tokens[k + 1 : k + 4]] != ["was", "that", "of"]:
            return None
        if not all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(k + 4)):
            return None
        entity = self._mention_at(tokens[k + 4])
        return None if entity is None or entity.startswith(_STRANGER) else entity

    def _as_appeared(self, tokens: list[_Tok], i: int) -> str | None:
        """ "Lily Bart appeared, tall and noble in her black dress": a word set after a
        comma behind a name and a verb of appearing says how the named one appeared; only
        where the name opens the sentence, in narration, and the word closes its phrase
        ("appeared, tall men behind her" is not hers)."""
        if i < 2 or inside(self.quotes, tokens[i].start):
            return None
        verb, named = tokens[i - 1], tokens[i - 2]
        if verb.low not in _ENTERING or self.text[verb.end : tokens[i].start].strip() != ",":
            return None
        entity = self._mention_at(named)
        if entity is None or entity.startswith(_STRANGER) or not self._gap_ok(named, verb):
            return None
        first = next(s for s, e, _ in self.mentions if s <= named.start < e)
        opening = self.text[self.sentence_start : first].strip(" \t\n\"“‘'(")
        if opening and not _CLAUSE_OPENS.search(opening):
            return None  # "Then Lily appeared, …", "When Lily appeared, …": not the clause
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        if after is not None and not (
            after.low in ("and", "in", "with", "but")
            or self.text[tokens[i].end : after.start].strip()
        ):
            return None
        return entity

    def _short_for_a_name(self, tokens: list[_Tok], i: int) -> bool:
        """ "Jo is short for a longer name" names; "short for his age", "short for a
        man" measure."""
        if tokens[i].low != "short" or i + 2 >= len(tokens) or tokens[i + 1].low != "for":
            return False
        after = tokens[i + 2]
        if after.low in _ATTRIBUTIVE_POSSESSIVES or after.low == "their":
            return False
        return not (
            after.low in ("a", "an") and i + 3 < len(tokens) and tokens[i + 3].low in _PERSON_NOUNS
        )

    def _told_otherwise(self, tokens: list[_Tok], i: int) -> list[_Found]:
        """Height and handedness said without their adjectives: "rather above the middle
        height", "stood six feet and three inches", "Mr. Frere towered above them", "wrote,
        as always, with his left hand"."""
        tok = tokens[i]
        if not self._plain(tok):
            return []
        if tok.low in _IDIOM_OPENERS:
            idiom = self._height_idiom(tokens, i)
            if idiom:
                return idiom
        if tok.low in _RELATIVE_HEIGHT and i + 3 < len(tokens):
            norm, noun = tokens[i + 2], tokens[i + 3]
            if (
                tokens[i + 1].low == "the"
                and norm.low in _HEIGHT_NORMS
                and noun.low in STATURE_NOUNS
                and all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(i, i + 3))
            ):
                owner, negated = self._subject_of(tokens, i, idiom=True)
                if owner and not negated:
                    classes = frozenset({_RELATIVE_HEIGHT[tok.low]})
                    words = f"{tok.low} the {norm.low} {noun.low}"
                    return [(owner, HEIGHT, words, classes, tok.start, tok.start, noun.end)]
        if tok.low in _NUMBERS and i + 1 < len(tokens) and tokens[i + 1].low in ("feet", "foot"):
            return self._measured(tokens, i)
        if tok.low in _TOWERING and i and self._gap_ok(tokens[i - 1], tok):
            # "Mr. Brand towered over the clerks", "he towered above them": the verb right
            # after its subject ("the window towers" is a noun's plural, and not a height)
            subject = tokens[i - 1]
            owner = self._subject_word(subject, inside(self.quotes, subject.start))
            if owner:
                return [
                    (owner, HEIGHT, tok.low, frozenset({"tall"}), tok.start, tok.start, tok.end)
                ]
        if tok.low in _GREYING_VERBS and i + 1 < len(tokens):
            return self._greying(tokens, i)
        if tok.low in ("hand", "arm") and i > 1 and tokens[i - 1].low in ("left", "right"):
            return self._habitual_hand(tokens, i - 1, tokens[i])
        if tok.low in _FEATURE_PRONOUNS and i + 1 < len(tokens) and tokens[i + 1].low in _COPULAS:
            return self._feature_pronoun(tokens, i)
        return []

    def _height_idiom(self, tokens: list[_Tok], i: int) -> list[_Found]:
        """Height told by idiom: "of great stature", "a man of small stature", "less than
        the middle size", "stood head and shoulders above the rest", "a head taller than",
        "came scarcely to his shoulder", "a giant of a man". Each is read only whole, and
        only where its subject is plain."""
        tok = tokens[i]
        if tok.low == "of" and (i + 1 >= len(tokens) or tokens[i + 1].low not in _AFTER_STATURE_OF):
            return []  # the common "of", decided before anything is built
        spoken = inside(self.quotes, tok.start)

        def words(at: int, count: int) -> list[str] | None:
            if at + count > len(tokens) or not all(
                self._gap_ok(tokens[n], tokens[n + 1]) for n in range(at, at + count - 1)
            ):
                return None
            return [t.low for t in tokens[at : at + count]]

        def found(owner: str | None, value: str, last: int) -> list[_Found]:
            if owner is None:
                return []
            return [(owner, HEIGHT, " ".join(t.low for t in tokens[i : last + 1]),
                     frozenset({value}), tok.start, tok.start, tokens[last].end)]  # fmt: skip

        if tok.low == "of":
            # "was of great height", "a man of small stature", "of a smallish stature"
            at = i + 2 if i + 1 < len(tokens) and tokens[i + 1].low in ("a", "an") else i + 1
            phrase = words(at, 2)
            if phrase is None or phrase[0] not in _STATURE_ADJECTIVES:
                return []
            if phrase[1] != "stature" and not (phrase[1] == "height" and i):
                return []
            value = _STATURE_ADJECTIVES[phrase[0]]
            before = tokens[i - 1] if i else None
            if before is not None and before.low in _COPULAS and self._gap_ok(before, tok):
                owner, negated = self._subject_of(tokens, at, idiom=True)
                return [] if negated else found(owner, value, at + 1)
            return self._noun_of_phrase(tokens, i, value, found, at + 1)
        if tok.low in _LESS_MORE:
            phrase = words(i, 5)
            if (
                phrase is not None
                and phrase[1:3] == ["than", "the"]
                and phrase[3] in _HEIGHT_NORMS
                and phrase[4] in STATURE_NOUNS
            ):
                owner, negated = self._subject_of(tokens, i, idiom=True)
                return [] if negated else found(owner, _LESS_MORE[tok.low], i + 4)
            return []
        if tok.low == "head" and i:
            phrase = words(i, 4)
            if (
                phrase
                and phrase[1:3] in (["and", "shoulders"], ["and", "shoulder"])
                and phrase[3] in ("above", "over", "taller", "higher")
            ):
                # "stood head and shoulders above every other man"
                return found(self._clause_subject(tokens, i, spoken), "tall", i + 3)
            if tokens[i - 1].low == "a" and (words(i, 2) or [""])[-1] == "taller":
                # "was a head taller than any man in the parish"
                return found(self._clause_subject(tokens, i - 1, spoken), "tall", i + 1)
            return []
        if tok.low == "taller" and words(i, 4) in (["taller", "by", "a", "head"],):
            return found(self._clause_subject(tokens, i, spoken), "tall", i + 3)
        if tok.low in _COMING or tok.low in _REACHING:
            return self._reached_up_to(tokens, i, found, spoken)
        if tok.low in _SIZE_NOUNS:
            # "a giant of a man", "a lean giant of a fellow"
            phrase = words(i, 4)
            if not phrase or phrase[1] != "of" or phrase[2] not in ("a", "an"):
                return []
            if phrase[3] not in _PERSON_NOUNS:
                return []
            article = i - 1
            while article >= 0 and i - article <= 3 and tokens[article].low not in ("a", "an"):
                if not self._plain(tokens[article]) or tokens[article].low in (
                    _PHRASE_MODIFIER_BLOCKERS
                ):
                    return []
                article -= 1
            if article < 0 or tokens[article].low not in ("a", "an"):
                return []
            owner, negated = self._subject_of(tokens, article, idiom=True)
            return [] if negated else found(owner, _SIZE_NOUNS[tok.low], i + 3)
        return []

    def _noun_of_phrase(
        self,
        tokens: list[_Tok],
        of_at: int,
        value: str,
        found: Callable[[str | None, str, int], list[_Found]],
        last: int,
    ) -> list[_Found]:
        """ "a man of small stature": the person noun before "of", its article, and whoever
        that noun phrase is said of ("Vance was a man …", "Vance, a man …"); the phrase
        ends at `last`."""
        if of_at < 2 or tokens[of_at - 1].low not in _PERSON_NOUNS:
            return []
        article = of_at - 2
        while article >= 0 and of_at - article <= 4 and tokens[article].low not in ("a", "an"):
            if not self._plain(tokens[article]) or tokens[article].low in _PHRASE_MODIFIER_BLOCKERS:
                return []
            article -= 1
        if article < 0 or tokens[article].low not in ("a", "an"):
            return []
        if not all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(article, of_at)):
            return []
        owner, negated = self._subject_of(tokens, article, idiom=True)
        return [] if negated else found(owner, value, last)

    def _reached_up_to(
        self,
        tokens: list[_Tok],
        i: int,
        found: Callable[[str | None, str, int], list[_Found]],
        spoken: bool,
    ) -> list[_Found]:
        """ "Minnie came scarcely to his elbow", "she barely reached his shoulder", "her
        head came up to his chin": someone shorter than another. Coming up to a shoulder
        with no word of measure is still read when the part closes the clause ("came up to
        his shoulder."); reaching always needs one ("reached his shoulder" may be a hand)."""
        k = i + 1
        measured = False
        while k < len(tokens) and tokens[k].low in _BARELY | {"up", "than"}:
            measured = measured or tokens[k].low in _BARELY
            k += 1
        if k < len(tokens) and tokens[k].low == "to":
            k += 1
        elif tokens[i].low in _COMING:
            return []
        named = self._mention_at(tokens[k]) if k < len(tokens) else None
        while named and k + 1 < len(tokens) and self._mention_at(tokens[k + 1]) == named:
            k += 1  # "came up to Captain Rennick's shoulder": the whole name
        if k + 1 >= len(tokens):
            return []
        owner_word, part = tokens[k], tokens[k + 1]
        if part.low not in _REACHED_PARTS:
            return []
        if not (owner_word.low in _ATTRIBUTIVE_POSSESSIVES or owner_word.low in ("their", "the")
                or owner_word.low.endswith(("'s", "’s"))):  # fmt: skip
            return []
        if not all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(i, k + 1)):
            return []
        measured = measured or (i > 0 and tokens[i - 1].low in _BARELY)
        after = tokens[k + 2] if k + 2 < len(tokens) else None
        gap = self.text[part.end : after.start] if after is not None else "."
        # without a word of measure, only where the sentence or clause ends there:
        # "came up to his shoulder, and tapped it" is a walk
        closes = after is None or bool(re.search(r"[.;!?]", gap))
        if not measured and (tokens[i].low in _REACHING or part.low == "elbow" or not closes):
            return []
        subject_at = i
        if i > 1 and tokens[i - 1].low in _BARELY:
            subject_at = i - 1
        if subject_at < 1:
            return []
        doer = tokens[subject_at - 1]
        if doer.low == "head" and subject_at > 1:
            # "her head scarcely came up to his shoulder"
            own = tokens[subject_at - 2]
            if own.low not in _ATTRIBUTIVE_POSSESSIVES:
                return []
            owner = self._possessor(own, spoken)
        elif self._mention_at(doer) or doer.low in ("he", "she", "i", "you", "who"):
            # a person comes up to the part, not their hair, hand or the water
            owner = self._clause_subject(tokens, subject_at, spoken)
        else:
            return []
        if (
            owner is not None
            and owner_word.low in _ATTRIBUTIVE_POSSESSIVES | {"their"}
            and self._possessor(owner_word, spoken) == owner
        ):
            return []  # "came to her own chin": nobody's height
        return found(owner, "short", k + 1)

    def _feature_pronoun(self, tokens: list[_Tok], i: int) -> list[_Found]:
        """ "her hair was cut short like a boy's, and that it was a bright, unmistakable
        red": "it" (hair) or "they" (eyes) after the feature in the same sentence, whose
        owner is read where the feature is named; the value must close its phrase."""
        kind = _FEATURE_PRONOUNS[tokens[i].low]
        cue = next((n for n in range(i - 1, -1, -1) if tokens[n].low in kind.cues), None)
        if cue is None:
            return []
        if any(t.low in ("it", "they", "them") for t in tokens[cue + 1 : i]):
            return []  # another "it" stands between: which one is meant is not clear
        if kind is EYES and tokens[cue].low != "eyes":
            return []
        if cue + 1 >= i or tokens[cue + 1].low not in _COPULAS | _FEATURE_VERBS:
            return []  # the feature must be its clause's subject: "a hat on her hair; it was"
        k = i + 2
        while (
            k < len(tokens)
            and k - i <= _PRONOUN_VALUE_WORDS
            and self._gap_ok(tokens[k - 1], tokens[k])
        ):
            word = tokens[k]
            if kind.classes(word.low):
                if word.low in _SHADES and k + 1 < len(tokens) and kind.classes(tokens[k + 1].low):
                    k += 1
                    continue
                after = tokens[k + 1] if k + 1 < len(tokens) else None
                gap = self.text[word.end : after.start] if after is not None else "."
                if not (_CLAUSE_BREAK.search(gap) or "," in gap):
                    return []  # "it was black with soot"
                if any(t.low in _NEGATIONS for t in tokens[i + 1 : k]) or not self._plain(word):
                    return []
                owner = self._owner_of(tokens, self._modifiers_from(tokens, cue), cue)
                if owner is None:
                    return []
                return [
                    (
                        owner,
                        kind,
                        word.low,
                        kind.classes(word.low),
                        word.start,
                        tokens[i].start,
                        word.end,
                    )
                ]
            if word.low in _PHRASE_MODIFIER_BLOCKERS - {"a", "an"} or not self._plain(word):
                return []
            k += 1
        return []

    def _measured(self, tokens: list[_Tok], i: int) -> list[_Found]:
        """ "stood six feet and three inches in his boots", "being but five feet four": a
        height in feet is tall from six feet, short at five feet four or under for a man
        (five feet for a woman or anyone whose card says nothing); between, it says
        nothing the scale names."""
        feet = _NUMBERS[tokens[i].low]
        if not _FEET_OF_A_PERSON[0] <= feet <= _FEET_OF_A_PERSON[1]:
            return []  # "one foot (the left one) on a little stool": a foot, not a height
        end = i + 1
        inches = 0
        rest = tokens[end + 1 : end + 4]
        if rest and rest[0].low == "and":
            rest = rest[1:]
        if rest and rest[0].low in _NUMBERS:
            inches = _NUMBERS[rest[0].low]
            end = tokens.index(rest[0])
            if end + 1 < len(tokens) and tokens[end + 1].low in ("inches", "inch"):
                end += 1
        stature = self._stature_before(tokens, i)
        if stature is None:
            return []  # "jumped six feet", "fell six feet and broke his arm": a distance
        after = tokens[end + 1] if end + 1 < len(tokens) else None
        if (
            after is not None
            and self._gap_ok(tokens[end], after)
            and after.low not in _HEIGHT_CLOSERS
            and not (stature and "," in self.text[tokens[end].end : after.start])
        ):
            return []  # "six feet away", "six feet of water"
        owner = self._height_of(tokens, i)
        if owner is None:
            owner = self._doer(tokens, i, ending=False)
        if owner is None:
            owner, negated = self._subject_of(tokens, i)
            if negated:
                return []
        if owner is None:
            return []
        short_under = 65 if _gender_of(self.cast, owner) == "he" else 60
        height = feet * 12 + inches
        if height >= 72:
            classes = frozenset({"tall"})
        elif height <= short_under:
            classes = frozenset({"short"})
        else:
            return []
        words = " ".join(t.low for t in tokens[i : end + 1])
        return [(owner, HEIGHT, words, classes, tokens[i].start, tokens[i].start, tokens[end].end)]

    def _headed(self, tokens: list[_Tok], i: int) -> list[_Found]:
        """ "a big fair-headed young giant", "he was red-headed": the colour of a head is
        its hair's, said of a person; never of a thing ("a gold-headed cane", "a
        black-headed gull"): the word must close its phrase or come before a person."""
        tok = tokens[i]
        colour = tok.low.removesuffix("-headed")
        if colour not in _HEAD_COLOURS:
            return []
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if nxt is not None and self._gap_ok(tok, nxt) and "," not in self.text[tok.end : nxt.start]:
            person = nxt
            if nxt.low in _AGE_WORDS and i + 2 < len(tokens):
                person = tokens[i + 2]
            if (
                person.low not in _PERSON_NOUNS
                and person.low not in _HEADED_BEINGS
                and not self._mention_at(nxt)  # "black-headed Colin of Glenure"
            ):
                return []
        owner, negated = self._subject_of(tokens, i)
        if owner is None or negated:
            return []
        classes = HAIR.classes(colour)
        return [(owner, HAIR, tok.low, classes, tok.start, tok.start, tok.end)]

    def _greying(self, tokens: list[_Tok], i: int) -> list[_Found]:
        """ "Dr. Fordyce had grown grey in the service of the parish", "You have grown
        grey, Francis": a person grown or going grey is grey-haired. Not "turned" or
        "went", nor white: "she went white to the lips" is a face."""
        tok, colour = tokens[i], tokens[i + 1]
        if not self._gap_ok(tok, colour) or colour.low not in _GREY_WORDS:
            return []
        if not i or tokens[i - 1].low not in _GREYING_AUXILIARIES:
            return []
        after = tokens[i + 2] if i + 2 < len(tokens) else None
        if (
            after is not None
            and self._gap_ok(colour, after)
            and (after.low in _ALL_CUES or after.low in _NOT_HAIR_AFTER_GREY)
        ):
            return []  # "gone grey eyes": not this
        if any(t.low in _NEGATIONS for t in tokens[max(0, i - 3) : i]):
            return []  # "he had not grown grey"
        j = i - 2
        while j >= 0 and tokens[j].low in _GREYING_ADVERBS:
            j -= 1
        subject = tokens[j] if j >= 0 else None
        if (
            subject is None
            or subject.low.endswith("'s")
            or not (subject.low in ("i", "you", "he", "she", "who") or self._mention_at(subject))
        ):
            return []  # "her face had gone grey with fear": a face, not hair
        owner = self._clause_subject(tokens, i, inside(self.quotes, tok.start))
        if owner is None:
            return []
        words = f"{tok.low} {colour.low}"
        return [(owner, HAIR, words, HAIR.classes(colour.low), tok.start, tok.start, colour.end)]

    def _height_of(self, tokens: list[_Tok], i: int) -> str | None:
        """ "His height was a little over six feet", "Roxton's height was six feet": whose
        height the number of feet at `i` is, when a possessive and "height" or "stature"
        are the verb's subject."""
        j = i - 1
        while j >= 0 and tokens[j].low in _MEASURE_ADVERBS:
            j -= 1
        if j < 2 or tokens[j].low not in ("was", "is") or tokens[j - 1].low not in STATURE_NOUNS:
            return None
        owner = tokens[j - 2]
        if not all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(j - 2, i)):
            return None
        if owner.low in _ATTRIBUTIVE_POSSESSIVES:
            return self._possessor(owner, inside(self.quotes, owner.start))
        if owner.low.endswith(("'s", "’s")):
            return self._mention_at(owner)
        return None

    def _stature_before(self, tokens: list[_Tok], i: int) -> bool | None:
        """Whether the number of feet at `i` measures someone: after a verb of standing or
        being ("stood six feet", "was well over six feet", "being but five feet four"),
        True; in apposition ("a big young giant, six feet two"), False (the phrase must
        then close); after any other word ("jumped six feet", "fell six feet"), None."""
        j = i - 1
        while (
            j >= 0 and tokens[j].low in _MEASURE_ADVERBS and self._gap_ok(tokens[j], tokens[j + 1])
        ):
            j -= 1
        if j < 0:
            return False
        gap = self.text[tokens[j].end : tokens[j + 1].start]
        if _CLAUSE_BREAK.search(gap) or "," in gap:
            return False
        if tokens[j].low in _STATURE_VERBS or tokens[j].low in _PERSON_NOUNS:
            return True  # "stood six feet"; "a man over six feet", "a man of six feet"
        return None

    def _habitual_hand(self, tokens: list[_Tok], side_at: int, last: _Tok) -> list[_Found]:
        """ "wrote, as always, with his left hand", "held her racquet in her left hand, as
        she always did": a hand used by habit is the hand a person uses; one use is not
        ("signed with his left hand"), nor the other hand while one is hurt. (Writing "with
        her left" without a habit was tried: it read a one-off in a held-out passage.)"""
        side, own = tokens[side_at], tokens[side_at - 1]
        if own.low == "the":
            return self._readiest_hand(tokens, side_at, last)
        if (
            own.low not in _ATTRIBUTIVE_POSSESSIVES
            and side_at >= 2
            and tokens[side_at - 2].low in _ATTRIBUTIVE_POSSESSIVES
            and own.low in _HAND_ADJECTIVES
            and self._gap_ok(tokens[side_at - 2], own)
        ):
            own = tokens[side_at - 2]  # "pointing with his long left hand, the hand he …"
        if own.low not in _ATTRIBUTIVE_POSSESSIVES or not self._gap_ok(tokens[side_at - 1], side):
            return []
        before = tokens[max(0, side_at - _HABIT_WORDS) : side_at]
        window = tokens[max(0, side_at - _HABIT_WORDS) : side_at + _HABIT_WORDS]
        # "writing, as she did everything, with her left hand"; "in his left hand, which
        # was the hand he did everything with"
        reach = tokens[max(0, side_at - _HABIT_WORDS) : side_at + _HABIT_WORDS + 2]
        did_everything = any(
            a.low in ("did", "does", "do") and b.low == "everything"
            for a, b in zip(reach, reach[1:], strict=False)
        )
        hurt = any(
            t.low in _HURT and (n + 1 >= len(window) or window[n + 1].low not in _NOT_A_HAND)
            for n, t in enumerate(window)
        )
        if not (any(t.low in _HABITUAL for t in window) or did_everything) or hurt:
            return []
        if any(t.low in _NEGATIONS for t in before):
            return []  # "he never wrote with his left hand"; "he used no other" after it
        owner = self._possessor(own, inside(self.quotes, own.start))
        if owner is None:
            return []
        words = f"{side.low} {last.low}, by habit"
        return [(owner, HANDEDNESS, words, frozenset({side.low}), side.start, own.start, last.end)]

    def _readiest_hand(self, tokens: list[_Tok], side_at: int, last: _Tok) -> list[_Found]:
        """ "with the left hand, which was always her readiest": the hand a relative clause
        calls someone's readiest, best or better one is the hand they use."""
        k = side_at + 2
        if k + 4 > len(tokens) or tokens[k].low != "which":
            return []
        for n in range(k + 1, min(k + 6, len(tokens) - 1)):
            if not self._gap_ok(tokens[n - 1], tokens[n]):
                return []
            if tokens[n].low in _ATTRIBUTIVE_POSSESSIVES and tokens[n + 1].low in _READIEST:
                if any(t.low in _NEGATIONS for t in tokens[k:n]):
                    return []
                owner = self._possessor(tokens[n], inside(self.quotes, tokens[n].start))
                if owner is None:
                    return []
                side = tokens[side_at]
                words = f"{side.low} {last.low}, {tokens[n].low} {tokens[n + 1].low}"
                return [
                    (owner, HANDEDNESS, words, frozenset({side.low}), side.start, side.start,
                     tokens[n + 1].end)
                ]  # fmt: skip
        return []

    def _doer(self, tokens: list[_Tok], i: int, *, ending: bool = True) -> str | None:
        """Who does what the word at `i` qualifies: "Silas cut the bread left-handed",
        "Mr. Brand towered over the clerks". With `ending`, the word must close its phrase,
        so "a left-handed compliment" is nobody's."""
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if (
            ending
            and nxt is not None
            and self._gap_ok(tokens[i], nxt)
            and "," not in self.text[tokens[i].end : nxt.start]
            and nxt.low not in _AFTER_A_DEED
        ):
            return None
        prev = tokens[i - 1]
        if not self._gap_ok(prev, tokens[i]):
            return None
        if not self._plain(prev):
            # "Mr. Brand towered": the name itself, for a verb; an adverb needs a deed.
            return None if ending else self._mention_at(prev)
        if prev.low in _COPULAS or prev.low in ("a", "an", "the"):
            return None
        return self._clause_subject(tokens, i, inside(self.quotes, tokens[i].start))

    def _asked_or_wished(self, tokens: list[_Tok], at: int) -> bool:
        """Whether the words at `at` are asked ("Are my eyes really green?", "The deceased
        was right-handed?") or wished ("How I wished that I had blue eyes"): neither says
        what is."""
        end = _QUESTION_END.search(self.text, at)
        if end is not None and end.group(0) == "?":
            return True
        index = next((n for n, t in enumerate(tokens) if t.start >= at), len(tokens))
        for n in range(index - 1, max(-1, index - 1 - _WISH_WORDS_BACK), -1):
            if _CLAUSE_SEPARATOR.search(
                self.text, tokens[n].end, tokens[n + 1].start if n + 1 < len(tokens) else at
            ):
                return False
            if tokens[n].low in _WISHES:
                return True
        return False

    # -- what is said -------------------------------------------------------------------

    def _plain(self, tok: _Tok) -> bool:
        """A word, not part of a name, and not capitalised mid-sentence (a proper noun)."""
        if any(s <= tok.start < e for s, e, _ in self.mentions):
            return False
        return not (tok.text[0].isupper() and tok.start != self.first)

    def _before_own_cue(self, tokens: list[_Tok], i: int, kind: FactKind) -> bool:
        """ "his tall, spare figure": the noun phrase of the cue reads it, not the predicate."""
        return self._noun_after(tokens, i) in kind.cues

    def _about_stature(self, tokens: list[_Tok], i: int) -> bool:
        """A weak height word ("little", "small", "middle") counts only as stature: "of
        middle height", "a little man", or ending its clause ("I was very little")."""
        word = tokens[i].low
        if self._for_now(tokens, i) or self._when_it_was(tokens, i):
            return False
        if word == "short" and i and tokens[i - 1].low in _STOPPED_SHORT:
            return False  # "cutting short Mrs. Gibson's lamentations", "stopped short"
        if word == "short" and _BRIEF_THINGS.search(
            self.text, max(self.sentence_start, tokens[i].start - _BRIEF_REACH), tokens[i].start
        ):
            return False  # "Mr. Monk made his speech,--and though he was short": brief
        if (i and tokens[i - 1].low == "too") or self._wanting_enough(tokens, i):
            # "never quite tall enough", "half an inch too short": measured against a
            # want, not a stature told
            return False
        if word not in WEAK_HEIGHT_WORDS:
            return True
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if word in ("middle", "medium", "middling"):
            return nxt is not None and nxt.low in STATURE_NOUNS
        # "a little girl" is a child, not a short one: "little" counts only closing its
        # clause ("I was very little"); "a small man" is one.
        if word == "little":
            # "a little, bent, brisk old gentleman" is short; "a little girl" is young, and
            # "a little woman", "a little gentleman" are as often praise as a measure.
            intensified = i > 0 and tokens[i - 1].low in _INTENSIFIERS  # "a very little man"
            if i > 0 and tokens[i - 1].low in _FOND_OR_SCORNFUL:
                return False  # "a silly little thing", "poor little soul": a judgement
            # "she was a little thing", not "left her some little thing"
            before_noun = (
                nxt is not None and nxt.low == "thing" and self._a_before(tokens, i)
            ) or (
                nxt is not None
                and (nxt.low not in _PERSON_NOUNS or intensified)
                and self._noun_after(tokens, i) in _GROWN_NOUNS
            )
        else:
            # "a small man", and "a small, quick man", "a small old woman": a grown
            # person's noun may follow other adjectives ("a small boy" must be next to it)
            before_noun = nxt is not None and (
                nxt.low in _PERSON_NOUNS or self._noun_after(tokens, i) in _GROWN_NOUNS
            )
        if i and tokens[i - 1].low in ("a", "an") and not before_noun:
            return False  # "a little surprised", "a small room"
        if nxt is None or not self._gap_ok(tokens[i], nxt):
            return True
        if _GROWN_CONCESSION.match(self.text, tokens[i].end):
            return True  # "Caroline was little, though evidently full grown": in stature
        return before_noun or nxt.low in ("for", "and") or self._of_stature(tokens, i)

    @staticmethod
    def _wanting_enough(tokens: list[_Tok], i: int) -> bool:
        """ "never quite tall enough", "tall enough to hang it": enough for a want, not a
        stature ("“I'm short enough,” said Osborne" is his)."""
        if i + 1 >= len(tokens) or tokens[i + 1].low != "enough":
            return False
        to_follow = i + 2 < len(tokens) and tokens[i + 2].low == "to"
        return to_follow or any(
            t.low in ("quite", "never", "not") for t in tokens[max(0, i - 3) : i]
        )

    def _for_now(self, tokens: list[_Tok], i: int) -> bool:
        """ "I'm short enough myself at present": a stature lasts; what holds for now is
        money, time or patience, and what held "for fourteen years" is a stretch gone by."""
        ahead = self.text[tokens[i].end : tokens[i].end + 40]
        return _FOR_NOW.match(ahead) is not None

    def _when_it_was(self, tokens: list[_Tok], i: int) -> bool:
        """ "he died when I was quite a little thing": a time past, told by "when … was"."""
        start = max(self.sentence_start, tokens[max(0, i - 6)].start)
        return _WHEN_IT_WAS.search(self.text, start, tokens[i].start) is not None

    @staticmethod
    def _a_before(tokens: list[_Tok], i: int) -> bool:
        """Whether "a"/"an" opens the phrase of `tokens[i]`: "a little", "quite a little"."""
        return i > 0 and tokens[i - 1].low in ("a", "an")

    def _of_stature(self, tokens: list[_Tok], i: int) -> bool:
        """ "small of stature", "short in stature": the height word's own measure."""
        following = tokens[i + 1 : i + 3]
        return (
            len(following) == 2
            and following[0].low in ("of", "in")
            and following[1].low in ("stature", "height")
            and self._gap_ok(tokens[i], following[0])
            and self._gap_ok(following[0], following[1])
        )

    def _value_words(self, words: Sequence[_Tok], kind: FactKind) -> list[_Tok]:
        values = [w for w in words if self._plain(w) and kind.classes(w.low)]
        # "dark blue eyes" says blue: a shade before another colour only modifies it.
        if len(values) > 1:
            values = [w for w in values if w.low not in _SHADES] or values
        return values

    def _gap_ok(self, a: _Tok, b: _Tok) -> bool:
        gap = self.text[a.end : b.start]
        if _CLAUSE_BREAK.search(gap):
            return False
        # a single quote mark may open or close speech ("murmured, ‘Blue sky, blue eyes’"):
        # a phrase never runs across it
        return not _SINGLE_QUOTES.search(gap) or inside(self.quotes, a.start) == inside(
            self.quotes, b.start
        )

    def _kept_locks(self, tokens: list[_Tok], i: int) -> bool:
        """ "the dark and light locks of hair under the glass": hair cut and kept, no one's
        head."""
        return (
            tokens[i].low in ("lock", "locks")
            and i + 2 < len(tokens)
            and tokens[i + 1].low == "of"
            and tokens[i + 2].low in ("hair", "hairs")
            and self._gap_ok(tokens[i], tokens[i + 2])
        )

    @staticmethod
    def _strands(before: Sequence[_Tok], cue: _Tok) -> bool:
        """Whether "hair" is counted ("her one grey hair", "a few white hairs", "a grey
        hair"): hairs one by one say nothing of a head's colour."""
        if any(word.low in _COUNTED for word in before):
            return True
        return cue.low == "hair" and bool(before) and before[0].low in ("a", "an")

    def _noun_phrase(self, tokens: list[_Tok], i: int, kind: FactKind) -> _Found | None:
        cue = tokens[i]
        before: list[_Tok] = []
        j = i - 1
        while j >= 0 and i - j <= 4 and self._gap_ok(tokens[j], tokens[j + 1]):
            if (
                tokens[j].low in _PHRASE_MODIFIER_BLOCKERS
                or tokens[j].low.endswith(("'s",))
                or tokens[j].low in _ALL_CUES  # "black hair, dark eyes": another noun's
            ):
                break
            before.insert(0, tokens[j])
            j -= 1
        values = self._value_words(before, kind)
        if cue.low == "body":
            # "his short, thick body" is his stature; "my little body will soon fall into
            # the background" is fondness, and "the body was small" may be a corpse's
            values = [v for v in before if v.low in ("tall", "short", "lanky", "squat")]
            if not values:
                return None
        if kind is HAIR and (self._strands(before, cue) or self._kept_locks(tokens, i)):
            return None  # "pulled her one grey hair out": a strand, not the hair's colour
        phrase_start = before[0] if before else cue
        phrase_end = cue
        exclaimed = self._exclaimed(tokens, i, kind)
        if exclaimed is not None:
            return exclaimed
        if not values:
            shade = self._shade_of(tokens, i, kind)
            if shade is not None:
                return shade
            after = (
                self._predicate_after(tokens, i, kind)
                or self._aside_value(tokens, i, kind)
                or self._simile_in_apposition(tokens, i, kind)
            )
            if not after:
                return None
            # "his own close-cropped hair was as red as a fox": whose hair is read from
            # before the words that describe it ("my face with eyes that were dark": none).
            values, phrase_end = after, after[-1]
        if any(t.low in _NEGATIONS for t in tokens[max(0, j) : tokens.index(phrase_end) + 1]):
            return None
        owner = self._of_ones_own(tokens, i)
        if owner is None:
            owner = self._owner_of(tokens, tokens.index(phrase_start), i)
        if owner is None and before:
            # "he had a pale skin, thin black hair": a comma may end the list's last item
            # rather than join an adjective to the phrase ("her long, black hair")
            after_comma = [
                n
                for n in range(tokens.index(phrase_start) + 1, tokens.index(values[0]) + 1)
                if "," in self.text[tokens[n - 1].end : tokens[n].start]
            ]
            if after_comma:
                phrase_start = tokens[after_comma[-1]]
                owner = self._owner_of(tokens, after_comma[-1], i)
        start_at = tokens.index(phrase_start)
        if (
            owner is None
            and kind is HEIGHT
            and start_at
            and tokens[start_at - 1].low in ("a", "an")
        ):
            # "Mrs. Rubelle struck me as a tall, wiry, sly person": a figure or person
            # described in the predicate is its subject's
            owner, negated = self._subject_of(tokens, tokens.index(values[0]))
            if negated:
                return None
        if owner is None:
            return None
        if kind is HEIGHT and any(
            v.low in ("little", "small") and tokens[tokens.index(v) - 1].low in _FOND_OR_SCORNFUL
            for v in values
            if tokens.index(v)
        ):
            return None  # "her charming little person": fondness, not a measure
        classes = frozenset().union(*(kind.classes(v.low) for v in values))
        opener = tokens[tokens.index(phrase_start) - 1] if tokens.index(phrase_start) else None
        quote_from = (
            opener.start
            if opener is not None and self._gap_ok(opener, phrase_start)
            else phrase_start.start
        )
        words = ", ".join(v.low for v in values)
        return (owner, kind, words, classes, values[0].start, quote_from, phrase_end.end)

    def _shade_of(self, tokens: list[_Tok], i: int, kind: FactKind) -> _Found | None:
        """ "the autumn-leaf brown of her hair", "the blue of his eyes": the value, "of" and a
        possessive before the noun."""
        if i < 3 or tokens[i - 1].low not in _ATTRIBUTIVE_POSSESSIVES or tokens[i - 2].low != "of":
            return None
        value = tokens[i - 3]
        if not kind.classes(value.low) or not self._plain(value):
            return None
        if not all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(i - 3, i)):
            return None
        if i > 3 and tokens[i - 4].low in _NEGATIONS:
            return None
        owner = self._possessor(tokens[i - 1], inside(self.quotes, tokens[i - 1].start))
        if owner is None:
            return None
        words = value.low
        return (owner, kind, words, kind.classes(words), value.start, value.start, tokens[i].end)

    def _predicate_after(self, tokens: list[_Tok], i: int, kind: FactKind) -> list[_Tok]:
        """ "eyes were blue", "eyes of the deepest blue", "eyes that I saw were dark", "her
        hair nearly black": the value after its noun."""
        k = i + 1
        if (
            k + 2 < len(tokens)
            and tokens[k].low in ("beneath", "under", "below")
            and tokens[k + 1].low in _ATTRIBUTIVE_POSSESSIVES
            and tokens[k + 2].low in _HEADWEAR
        ):
            k += 3  # "the hair beneath his hat was white"
        if (
            k + 3 < len(tokens)
            and tokens[k].low == "like"
            and tokens[k + 1].low in _ATTRIBUTIVE_POSSESSIVES
            and tokens[k + 2].low in _ALL_CUES
            and tokens[k + 3].low in _COPULAS
            and "," in self.text[tokens[i].end : tokens[k].start]
            and "," in self.text[tokens[k + 2].end : tokens[k + 3].start]
            and self._gap_ok(tokens[k], tokens[k + 1])
            and self._gap_ok(tokens[k + 1], tokens[k + 2])
        ):
            k += 3  # "Her large eyes, like her hair, were brown": the verb after the aside
        if (
            k < len(tokens)
            and tokens[k].low == "where"
            and "," in self.text[tokens[i].end : tokens[k].start]
        ):
            # "her own hair, where it showed at the back under her cap, was quite grey": a
            # clause of place between commas, then the verb
            closing = next(
                (
                    n
                    for n in range(k + 1, min(k + _RELATIVE_SKIP + 1, len(tokens)))
                    if "," in self.text[tokens[n - 1].end : tokens[n].start]
                ),
                None,
            )
            if closing is None or tokens[closing].low not in _COPULAS:
                return []
            if not all(self._gap_ok(tokens[n - 1], tokens[n]) for n in range(k, closing + 1)):
                return []
            k = closing
        elif (
            k < len(tokens)
            and tokens[k].low in ("that", "which")
            and self._gap_ok(tokens[i], tokens[k])
        ):
            # "eyes that I saw were dark": a short relative clause before the verb.
            verb = next(
                (
                    n
                    for n in range(k + 1, min(k + _RELATIVE_WORDS, len(tokens)))
                    if tokens[n].low in _COPULAS
                    and all(self._gap_ok(tokens[m - 1], tokens[m]) for m in range(k, n + 1))
                ),
                None,
            )
            if verb is None:
                return []
            if tokens[verb - 1].low == "had" or any(
                t.low in _FORMERLY for t in tokens[k + 1 : verb]
            ):
                # "hair, which had once been black, was now quite white": a state the
                # clause says is past, not what the hair is; the verb after it tells that
                main = next(
                    (
                        n
                        for n in range(verb + 1, min(verb + _RELATIVE_WORDS, len(tokens)))
                        if "," in self.text[tokens[n - 1].end : tokens[n].start]
                    ),
                    None,
                )
                if main is None or tokens[main].low not in _COPULAS:
                    return []
                verb = main
            k = verb
        if self._simile_at(tokens, k, kind) and self._gap_ok(tokens[k - 1], tokens[k]):
            return [tokens[k + 1]]  # "eyes as blue as the sea"
        if (
            k + 1 < len(tokens)
            and tokens[k].low in ("had", "has", "have")
            and tokens[k + 1].low in ("turned", "grown", "become", "gone")
            and self._gap_ok(tokens[k], tokens[k + 1])
        ):
            k += 1  # "Caleb Yeo's hair had turned white in a single night"
        linked = k < len(tokens) and tokens[k].low in _COPULAS | {"of", "gone"}
        of_at = k + 1 if linked and k + 1 < len(tokens) and tokens[k + 1].low == "of" else k
        if linked and of_at + 1 < len(tokens) and tokens[of_at].low == "of":
            that_value = self._of_that(tokens, of_at, kind)
            if that_value:
                # "hair was of that red which the Venetians painted", "eyes of that
                # peculiar grey which in Kerry they call the colour of rain"
                return that_value
        # "Her hair was black, her eyes a deep blue": the verb of a list's first clause is
        # understood in the next; the value must then close its phrase.
        gapped = (
            not linked
            and k < len(tokens)
            and tokens[k].low in ("a", "an")
            and i > 0
            and (
                "," in self.text[tokens[i - 2 if i > 1 else 0].end : tokens[i].start]
                # "Kael's hair, a rich auburn, fell loose": a value in apposition
                or "," in self.text[tokens[i].end : tokens[k].start]
            )
        )
        linked = linked or gapped
        adverb = k < len(tokens) and (
            tokens[k].low in ("nearly", "almost", "quite", "all", "now", "still")
            or (tokens[k].low.endswith("ly") and len(tokens[k].low) > 4)
        )
        if not (linked or adverb) and self._bare_value(tokens, i, k, kind):
            # "his face being sunburnt to wheat-color, his eyes blue as corn-flowers"
            return [tokens[k]]
        if not (linked or adverb) or not self._gap_ok(tokens[k - 1], tokens[k]):
            return []
        k += 1
        verb_at = k
        while k < len(tokens) and tokens[k].low in _ADVERBS and k - verb_at <= 5:
            k += 1
        if (
            linked
            and k + 3 < len(tokens)
            and tokens[k].low == "as"
            and tokens[k + 2].low == "and"
            and tokens[k + 3].low == "as"
        ):
            k += 3  # "her eyes were as bright and as black as a girl's"
        if linked and self._simile_at(tokens, k, kind):
            return [tokens[k + 1]]  # "eyes, which were as black as sloes"
        qualified = 0
        if linked and (tokens[k - 1].low in ("a", "an", "the") or gapped):
            # "was of a lustrous black": a word or two may qualify the value, which must
            # then close the phrase ("was of a lustrous black, and flowing").
            while (
                k < len(tokens)
                and qualified < _VALUE_QUALIFIERS_MAX
                and not kind.classes(tokens[k].low)
                and tokens[k].low not in _PHRASE_MODIFIER_BLOCKERS
                and self._gap_ok(tokens[k - 1], tokens[k])
            ):
                k += 1
                qualified += 1
        run: list[_Tok] = []
        while k < len(tokens) and self._gap_ok(tokens[k - 1], tokens[k]):
            if kind.classes(tokens[k].low):
                run.append(tokens[k])
            elif tokens[k].low in _SHADES and not run:
                pass  # "hair was light brown": a shade that is no value of its own
            elif tokens[k].low != "and" or not run:
                break
            k += 1
        if run and ((adverb and not linked) or qualified):
            # Without a verb the value must close the phrase: "her hair nearly black",
            # not "his hair almost black curls".
            last = tokens.index(run[-1])
            after = tokens[last + 1] if last + 1 < len(tokens) else None
            gap = self.text[run[-1].end : after.start] if after is not None else ""
            closed = _CLAUSE_BREAK.search(gap) or "," in gap
            if after is not None and not closed and after.low not in ("that", "which"):
                return []  # "eyes of the light hazel that is seen in sailors' faces" closes
        if run and linked and self._noun_follows(tokens, tokens.index(run[-1])):
            # "clinging to her hair, were red and yellow leaves": the colour is the noun's
            # after it, not the hair's
            return []
        if not run and linked:
            return self._coordinated_of_value(tokens, k, kind) or self._dash_apposed_value(
                tokens, k, kind
            )
        return self._value_words(run, kind)

    def _bare_value(self, tokens: list[_Tok], i: int, k: int, kind: FactKind) -> bool:
        """Whether a value stands right after its feature with no verb, as a phrase of its
        own: it closes the phrase or opens a likeness ("his eyes blue as corn-flowers, his
        sleeves dyed"), never a noun's colour ("her eyes brown hair")."""
        if k != i + 1 or k >= len(tokens) or not self._gap_ok(tokens[i], tokens[k]):
            return False
        if not kind.classes(tokens[k].low) or not self._plain(tokens[k]):
            return False
        if k + 1 >= len(tokens):
            return True
        gap = self.text[tokens[k].end : tokens[k + 1].start]
        if _CLAUSE_BREAK.search(gap) or "," in gap:
            return True
        return tokens[k + 1].low == "as" and self._gap_ok(tokens[k], tokens[k + 1])

    def _noun_follows(self, tokens: list[_Tok], last: int) -> bool:
        """Whether a plain noun closes the phrase a value at `last` opens ("red and yellow
        leaves"), so the value describes that noun: a word with no gap before it that is
        no link, preposition, adverb or clause word, and ends its phrase."""
        if last + 1 >= len(tokens):
            return False
        word = tokens[last + 1]
        if not self._gap_ok(tokens[last], word) or "," in self.text[tokens[last].end : word.start]:
            return False
        if not self._plain(word) or word.low in _VALUE_FOLLOWERS or word.low.endswith("ly"):
            return False
        if word.low in _PHRASE_MODIFIER_BLOCKERS or word.low in _ALL_CUES:
            return False
        nxt = tokens[last + 2] if last + 2 < len(tokens) else None
        return nxt is None or not self._gap_ok(word, nxt) or nxt.low in _PHRASE_ENDERS

    def _coordinated_of_value(self, tokens: list[_Tok], k: int, kind: FactKind) -> list[_Tok]:
        """ "her eyes, which were enormous, and of a grey so dark …", "his hair was thick,
        and of a rich brown": a second predicate "of (a) … <value>" joined by "and" after
        plain words that state nothing of the kind."""
        n = k
        while n < len(tokens) and n - k <= _COORDINATED_OF_REACH:
            if not self._gap_ok(tokens[n - 1], tokens[n]) or not self._plain(tokens[n]):
                return []
            word = tokens[n].low
            if word == "of" and tokens[n - 1].low == "and":
                value = n + 1
                if value < len(tokens) and tokens[value].low in ("a", "an", "the"):
                    value += 1
                return self._value_after_qualifiers(tokens, value, kind)
            if word in _NEGATIONS or word in _PHRASE_MODIFIER_BLOCKERS - {"and"}:
                return []
            n += 1
        return []

    def _dash_apposed_value(self, tokens: list[_Tok], k: int, kind: FactKind) -> list[_Tok]:
        """ "his eyes were too pale for his colouring—a cold, light blue": after a predicate
        that names no value, "a … <value>" set off by a dash says what it is."""
        n = k
        while n + 1 < len(tokens) and n - k <= _COORDINATED_OF_REACH:
            gap = self.text[tokens[n].end : tokens[n + 1].start]
            if _DASH.fullmatch(gap.strip()):
                break
            if _CLAUSE_BREAK.search(gap) or tokens[n].low in _NEGATIONS:
                return []
            n += 1
        else:
            return []
        opening = n + 1
        if tokens[opening].low not in ("a", "an"):
            return []
        return self._value_after_qualifiers(tokens, opening + 1, kind)

    def _simile_in_apposition(self, tokens: list[_Tok], i: int, kind: FactKind) -> list[_Tok]:
        """ "her eyes, blue as the summer sky, met his": a simile set off by a comma after
        the noun states its value."""
        k = i + 1
        if k + 2 >= len(tokens) or "," not in self.text[tokens[i].end : tokens[k].start]:
            return []
        value, as_word = tokens[k], tokens[k + 1]
        if as_word.low != "as" or not kind.classes(value.low) or not self._plain(value):
            return []
        return [value] if self._gap_ok(value, as_word) else []

    def _aside_value(self, tokens: list[_Tok], i: int, kind: FactKind) -> list[_Tok]:
        """ "her eyes—large, grave, and of the clearest grey—", "the hair—black, coarse, and
        perfectly straight—": a value among the words set off by dashes after the noun."""
        if i + 1 >= len(tokens):
            return []
        if not _DASH.fullmatch(self.text[tokens[i].end : tokens[i + 1].start].strip()):
            return []
        k = i + 1
        while k < len(tokens) and k - i <= _ASIDE_WORDS:
            if k > i + 1 and not self._gap_ok(tokens[k - 1], tokens[k]):
                closing = self.text[tokens[k - 1].end : tokens[k].start].strip()
                if not _DASH.fullmatch(closing):
                    return []
                break
            k += 1
        inside_aside = tokens[i + 1 : k]
        if any(
            w.low in _NEGATIONS
            or (w.low in _PHRASE_MODIFIER_BLOCKERS - _ASIDE_LINKS)
            or not self._plain(w)
            for w in inside_aside
        ):
            return []
        return self._value_words(inside_aside, kind)

    def _exclaimed(self, tokens: list[_Tok], i: int, kind: FactKind) -> _Found | None:
        """ "I saw for the first time how blue her eyes were": "how", the value and a
        possessive before the noun, a verb of being after it."""
        if i < 3 or tokens[i - 3].low != "how" or i + 1 >= len(tokens):
            return None
        value, own, verb = tokens[i - 2], tokens[i - 1], tokens[i + 1]
        if own.low not in _ATTRIBUTIVE_POSSESSIVES or verb.low not in _COPULAS:
            return None
        if not kind.classes(value.low) or not self._plain(value):
            return None
        if not all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(i - 3, i + 1)):
            return None
        owner = self._possessor(own, inside(self.quotes, own.start))
        if owner is None:
            return None
        classes = kind.classes(value.low)
        return (owner, kind, value.low, classes, value.start, tokens[i - 3].start, verb.end)

    def _of_that(self, tokens: list[_Tok], of_at: int, kind: FactKind) -> list[_Tok]:
        """The value of "of that (peculiar) grey which…" from the "of" at `of_at`."""
        if of_at + 2 >= len(tokens) or tokens[of_at + 1].low != "that":
            return []
        return self._value_after_qualifiers(tokens, of_at + 2, kind)

    def _value_after_qualifiers(self, tokens: list[_Tok], start: int, kind: FactKind) -> list[_Tok]:
        """The value a few plain qualifying words from `start` lead to ("peculiar grey",
        "cold, light blue"), and the run it opens: "dark red which is almost brown" is red,
        not dark. Nothing when a name, a clause break or a phrase's link comes first."""
        for n in range(start, min(start + _VALUE_QUALIFIERS_MAX + 1, len(tokens))):
            if not self._gap_ok(tokens[n - 1], tokens[n]) or not self._plain(tokens[n]):
                return []
            if kind.classes(tokens[n].low):
                end = n + 1
                while (
                    end < len(tokens)
                    and kind.classes(tokens[end].low)
                    and self._gap_ok(tokens[end - 1], tokens[end])
                ):
                    end += 1
                return self._value_words(tokens[n:end], kind)
            if tokens[n].low in _PHRASE_MODIFIER_BLOCKERS:
                return []
        return []

    def _simile_at(self, tokens: list[_Tok], k: int, kind: FactKind) -> bool:
        """ "as black as sloes" at `k`: a simile states its value."""
        return (
            k + 2 < len(tokens)
            and tokens[k].low == "as"
            and tokens[k + 2].low == "as"
            and bool(kind.classes(tokens[k + 1].low))
            and self._plain(tokens[k + 1])
            and self._gap_ok(tokens[k], tokens[k + 2])
        )

    # -- whose it is --------------------------------------------------------------------

    def _object_of_a_preposition(self, tok: _Tok) -> bool:
        """Whether the name holding `tok` follows a preposition ("behind the Marshal")."""
        start = next((s for s, e, _ in self.mentions if s <= tok.start < e), tok.start)
        return bool(_PREPOSITION_BEFORE.search(self.text, max(0, start - 24), start))

    def _mention_at(self, tok: _Tok) -> str | None:
        """The entity named by the name this word is part of ("Hallward’s" in "Basil
        Hallward’s")."""
        for s, e, entity in self.mentions:
            if s <= tok.start < e:
                return entity
        return None

    def _person(self, tok: _Tok) -> str | None:
        """Whom a first- or second-person word means here: the narrator or the speaker for
        "I" and "my", the one person addressed for "you" and "your"."""
        if tok.low in FIRST_PERSON:
            return self.voices.first_person(tok.start)
        if tok.low in SECOND_PERSON:
            return self.voices.second_person(tok.start)
        return None

    def _inherited(self, tokens: list[_Tok], kin_at: int, spoken: bool) -> str | None:
        """ "Tom has his father's brown eyes", "she had her mother's red hair": a feature
        someone has from kin is theirs too. Only with "has"/"had" and a possessive before the
        kin, so "his father's brown eyes were closed" stays the father's."""
        kin = tokens[kin_at].low.rsplit("'", 1)[0]
        if kin not in _KIN or kin_at < 2:
            return None
        own, verb = tokens[kin_at - 1], tokens[kin_at - 2]
        if own.low not in _ATTRIBUTIVE_POSSESSIVES or verb.low not in _HAVING:
            return None
        if not self._gap_ok(verb, own) or not self._gap_ok(own, tokens[kin_at]):
            return None
        subject = self._clause_subject(tokens, kin_at - 2, spoken)
        # the possessive must be the subject's own: "she had her mother's eyes"
        return subject if subject is not None and subject == self._possessor(own, spoken) else None

    def _coloured_head(self, tokens: list[_Tok], i: int) -> _Found | None:
        """ "his grizzled head", "Jem had got his red head from nobody knew where": a
        colour before a person's head is the hair's. Only before the noun (never "his head
        was light"), and only with a possessive or a name's."""
        value = tokens[i - 1]
        if value.low not in _HEAD_HAIR_COLOURS or not self._plain(value):
            return None
        if not self._gap_ok(value, tokens[i]) or i < 2:
            return None
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        if after is not None and after.low == "of" and self._gap_ok(tokens[i], after):
            return None  # "the red head of the match"
        owner = self._owner_of(tokens, i - 1, i)
        before = tokens[i - 2]
        if owner is None or not (
            before.low in _ATTRIBUTIVE_POSSESSIVES or before.low.endswith("'s")
        ):
            return None
        classes = HAIR.classes(value.low)
        if not classes:
            return None
        return (owner, HAIR, value.low, classes, value.start, before.start, tokens[i].end)

    def _owner_of(self, tokens: list[_Tok], start: int, cue: int) -> str | None:
        spoken = inside(self.quotes, tokens[start].start)
        if start > 0:
            prev = tokens[start - 1]
            if self._gap_ok(prev, tokens[start]):
                if (
                    prev.low in _OBJECT_PRONOUNS
                    and start > 2
                    and tokens[start - 2].low in ("upon", "on", "at", "to", "towards", "toward")
                    and tokens[start - 3].low in _GAZE_VERBS
                    and all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(start - 3, start))
                ):
                    # "She turned upon him a pair of dark eyes": the eyes one turns are one's own
                    return self._clause_subject(tokens, start - 3, spoken)
                if prev.low.endswith("'s") and prev.low not in _SUBJECT_COPULAS:
                    return self._mention_at(prev) or self._inherited(tokens, start - 1, spoken)
                if prev.low in FIRST_PERSON or prev.low in SECOND_PERSON:
                    return self._person(prev)
                if prev.low in _POSSESSIVES:
                    gender = _POSSESSIVES[prev.low]
                    if spoken:
                        return self._named_in_speech(gender, prev.start)
                    return self._resolve(gender, prev.start)
                if prev.low in _SUBJECT_LINKS:
                    return self._clause_subject(tokens, start - 1, spoken)
                if (
                    prev.low == "the"
                    and tokens[start].low.endswith("est")
                    and start > 1
                    and tokens[start - 2].low in _SUBJECT_LINKS
                    and self._gap_ok(tokens[start - 2], prev)
                ):
                    # "Minnie had the bluest eyes in the county"
                    return self._clause_subject(tokens, start - 2, spoken)
                if (
                    start > 1
                    and prev.low == "the"
                    and (tokens[start].text[:1].isupper() or tokens[start].low == "family")
                    and tokens[start + 1].low in _ALL_CUES
                    and tokens[start - 2].low in _SUBJECT_LINKS
                    and self._gap_ok(tokens[start - 2], prev)
                ):
                    # "she had the Tregarthen hair—black, coarse, abundant": a family's
                    # feature the subject has
                    return self._clause_subject(tokens, start - 2, spoken)
                if prev.low == "and":
                    shared = self._shared_possessive(tokens, start - 1, cue, spoken)
                    before_and = tokens[start - 2] if start > 1 else None
                    if (
                        shared is None
                        and before_and is not None
                        and before_and.low in _ALL_CUES
                        and self._gap_ok(before_and, prev)
                    ):
                        # "with grey eyes and red hair": the second feature is the first's
                        return self._owner_of(
                            tokens, self._modifiers_from(tokens, start - 2), start - 2
                        )
                    # "he had a fine forehead, a good nose, and a quantity of black hair"
                    return shared or self._listed_feature_owner(tokens, start, spoken)
                if prev.low in _ALL_CUES and "," in self.text[prev.end : tokens[start].start]:
                    # "with black hair, dark eyes": a list shares its first item's owner;
                    # "with a somewhat wiry frame, flaxen hair": the list's own "with"
                    # tells it when its first item names no colour
                    first = self._owner_of(
                        tokens, self._modifiers_from(tokens, start - 1), start - 1
                    )
                    return first or self._listed_feature_owner(tokens, start, spoken)
                if "," in self.text[prev.end : tokens[start].start] and self._plain(prev):
                    # "he had a pale blond skin, thin brown hair, dark-brown eyes"
                    listed = self._listed_feature_owner(tokens, start, spoken)
                    if listed is not None:
                        return listed
                if prev.low == "whose" and start > 1:
                    # "Jane, whose dark hair had been much admired"
                    return self._mention_at(tokens[start - 2])
                if prev.low in ("the", "a", "an"):
                    # "with the strong jaw and the brown eyes", "had a short beard, and a pair
                    # of hazel eyes": a list of features after "with" or "had" is its clause
                    # subject's
                    listed = self._listed_feature_owner(tokens, start - 1, spoken)
                    if listed is not None:
                        return listed
            if prev.low == "of" and start > 1 and tokens[start - 2].low in _QUANTITY_NOUNS:
                # "with a shock of ginger hair", "a solid, sticky bob of black hair"
                measure = start - 2
                while (
                    measure > 0
                    and start - 2 - measure < _ATTRIBUTIVE_ADJECTIVES_MAX
                    and self._plain(tokens[measure - 1])
                    and tokens[measure - 1].low not in _PHRASE_MODIFIER_BLOCKERS
                    and self._gap_ok(tokens[measure - 1], tokens[measure])
                ):
                    measure -= 1
                if measure and tokens[measure - 1].low in ("a", "an", "the"):
                    measure -= 1
                return self._owner_of(tokens, measure, cue)
            if (
                prev.low == "of"
                and start > 2
                and tokens[start - 2].low in ("kind", "sort")
                and tokens[start - 3].low in ("a", "that", "the", "this")
                and all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(start - 3, start))
            ):
                # "He had that kind of shallow grey eye"
                return self._owner_of(tokens, start - 3, cue)
        if self._portrait_goes_on(tokens, start, cue):
            # "Caroline was little, though evidently full grown; raven-black hair, very dark
            # eyes, absolutely regular features": the portrait's subject's
            return self._clause_subject(tokens, start - 1, spoken)
        after = cue + 1
        if after + 1 < len(tokens) and tokens[after].low == "of":
            return self._mention_at(tokens[after + 1])
        if start == 0 and tokens[cue].low in HAIR.cues:
            crowned = self._crowning(tokens, cue)
            if crowned is not None:
                return crowned
        if (
            start > 0
            and tokens[start - 1].low == "the"
            and after + 2 < len(tokens)
            and tokens[after].low in ("beneath", "under", "below")
            and tokens[after + 1].low in _ATTRIBUTIVE_POSSESSIVES
            and tokens[after + 2].low in _HEADWEAR
            and all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(cue, after + 2))
        ):
            # "the hair beneath his hat was white": the one whose hat it is
            own = tokens[after + 1]
            return self._possessor(own, inside(self.quotes, own.start))
        if after < len(tokens) and tokens[after].low == "and":
            # "the narrow slanting green eyes and compressed lips of William Dane"
            for of_at in range(after + 2, min(after + 5, len(tokens) - 1)):
                if not self._gap_ok(tokens[of_at - 1], tokens[of_at]):
                    return None
                if tokens[of_at].low == "of":
                    return self._mention_at(tokens[of_at + 1])
                if not self._plain(tokens[of_at]) or tokens[of_at].low in (
                    _PHRASE_MODIFIER_BLOCKERS
                ):
                    return None
        return None

    def _portrait_goes_on(self, tokens: list[_Tok], start: int, cue: int) -> bool:
        """Whether a bare feature ("raven-black hair", no article or possessive) opens a
        list after a semicolon or colon that follows a clause saying what someone was."""
        if start == 0 or tokens[start].low in _PHRASE_MODIFIER_BLOCKERS:
            return False
        if self.text[tokens[start - 1].end : tokens[start].start].strip() not in (";", ":"):
            return False
        after = self.text[tokens[cue].end : tokens[cue + 1].start] if cue + 1 < len(tokens) else ""
        if "," not in after:
            return False  # a list goes on: "; raven-black hair, very dark eyes, …"
        j = start - 1
        while j > 0 and self._gap_ok(tokens[j - 1], tokens[j]):
            j -= 1
        return any(t.low in _COPULAS for t in tokens[j:start])

    def _predicate_before_colon(self, tokens: list[_Tok], j: int) -> int | None:
        """Where the copula stands when `tokens[j]` ends "was very handsome" right before a
        colon, in narration: "he was very handsome: slender, …". None otherwise."""
        if self.text[tokens[j].end : tokens[j + 1].start].strip() != ":":
            return None
        if inside(self.quotes, tokens[j].start) or not self._plain(tokens[j]):
            return None
        k = j - 1
        while k >= 0 and j - k <= 2 and tokens[k].low in _INTENSIFIERS | {"quite", "rather"}:
            k -= 1
        if k < 0 or tokens[k].low not in _COPULAS:
            return None
        if not all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(k, j)):
            return None
        return k

    def _after_colon(self, tokens: list[_Tok], article: int) -> bool:
        """Whether `tokens[article]` is "a" or "an" right after a colon."""
        return (
            0 < article < len(tokens)
            and tokens[article].low in ("a", "an")
            and self.text[tokens[article - 1].end : tokens[article].start].strip() == ":"
        )

    def _colon_apposed(self, tokens: list[_Tok], article: int, gender: Gender | None) -> str | None:
        """ "Mr. Henry came himself to the door to welcome me: a tall dark young gentleman":
        a person set out after a colon is the one person of that sex the clause before it
        names in narration."""
        start = article - 1
        while start > 0 and self._gap_ok(tokens[start - 1], tokens[start]):
            start -= 1
        if any(
            t.low in _PERSON_NOUNS or t.low in _KIN or t.low in ("him", "her", "them")
            for t in tokens[start:article]
        ):
            return None  # "Mr. Henry spoke to his father: a tall old gentleman": the father
        low, high = tokens[start].start, tokens[article - 1].end
        named = {
            entity
            for s, e, entity in self.mentions
            if s < high
            and e > low  # "Mr. Henry": a title's stop is no clause break
            and not inside(self.quotes, s)
            and _compatible(_gender_of(self.cast, entity), gender)
        }
        return next(iter(named)) if len(named) == 1 else None

    def _crowning(self, tokens: list[_Tok], cue: int) -> str | None:
        """ "A bush of crinkly yellow hair topped his red, freckled face": hair opening its
        sentence that tops, frames or falls about someone's head is theirs."""
        k = cue + 1
        if k >= len(tokens) or tokens[k].low not in _CROWNING_VERBS:
            return None
        k += 1
        if k < len(tokens) and tokens[k].low in _CROWNING_PARTICLES:
            k += 1
        if k >= len(tokens) or tokens[k].low not in _ATTRIBUTIVE_POSSESSIVES:
            return None
        for n in range(k + 1, min(k + 4, len(tokens))):
            if not all(self._gap_ok(tokens[m], tokens[m + 1]) for m in range(cue, n)):
                return None
            if tokens[n].low in _HEAD_PARTS:
                return self._possessor(tokens[k], inside(self.quotes, tokens[k].start))
            if not self._plain(tokens[n]) or tokens[n].low in _PHRASE_MODIFIER_BLOCKERS:
                return None
        return None

    def _listed_feature_owner(self, tokens: list[_Tok], the: int, spoken: bool) -> str | None:
        """Whose "the brown eyes" are in "… with the strong jaw and the brown eyes": the
        list must run back, through "and" and plain words only, to "with", "had" or "has"."""
        j = the - 1
        joined = 0
        while j >= 0 and the - j <= _FEATURE_LIST_WORDS:
            if not self._gap_ok(tokens[j], tokens[j + 1]):
                return None
            word = tokens[j]
            if "," in self.text[word.end : tokens[j + 1].start]:
                joined += 1
            if word.low in _SUBJECT_LINKS:
                return self._clause_subject(tokens, j, spoken) if joined else None
            if (
                word.low in _ATTRIBUTIVE_POSSESSIVES
                and joined
                and (j == 0 or not self._gap_ok(tokens[j - 1], word))
                and self._feature_item(tokens, j + 1, the)
            ):
                # "; his tall figure, long and dark locks, his voice": a list its clause
                # opens with a possessive is that one's
                return self._possessor(word, spoken)
            if word.low == "and":
                joined += 1
            elif word.low not in ("the", "a", "an") and (
                not self._plain(word) or word.low in _PHRASE_MODIFIER_BLOCKERS
            ):
                return None
            j -= 1
        return None

    def _feature_item(self, tokens: list[_Tok], first: int, last: int) -> bool:
        """Whether the list item opening at `first` (before `last`) is a feature of the
        body ("tall figure,"), not someone ("wife,"): its last word before a comma."""
        for n in range(first, last):
            if "," in self.text[tokens[n].end : tokens[n + 1].start]:
                return tokens[n].low in _FIGURE_NOUNS
        return False

    def _modifiers_from(self, tokens: list[_Tok], i: int) -> int:
        """Where the noun phrase ending at the noun `tokens[i]` begins: "black" in "with
        black hair"."""
        j = i - 1
        while j >= 0 and i - j <= 4 and self._gap_ok(tokens[j], tokens[j + 1]):
            if tokens[j].low in _PHRASE_MODIFIER_BLOCKERS or tokens[j].low.endswith("'s"):
                break
            if tokens[j].low in _ALL_CUES or "," in self.text[tokens[j].end : tokens[j + 1].start]:
                break
            j -= 1
        return j + 1

    def _shared_possessive(self, tokens: list[_Tok], at: int, cue: int, spoken: bool) -> str | None:
        """ "her pink cheeks and golden curls": the possessive of the noun before "and",
        at most three words back, in the same clause."""
        j = at - 1
        while j >= 0 and at - j <= 3 and self._gap_ok(tokens[j], tokens[j + 1]):
            if tokens[j].low in _POSSESSIVES or tokens[j].low in ("my", "your"):
                return self._owner_of(tokens, j + 1, cue)
            if tokens[j].low.endswith("'s") and tokens[j].low not in _SUBJECT_COPULAS:
                return self._mention_at(tokens[j])
            j -= 1
        return None

    def _named_in_speech(self, gender: Gender | None, before: int) -> str | None:
        """ "her eyes" in speech: the one person of that gender named earlier in the same
        speech, if there is exactly one: in its earlier sentences too ("“I saw Mary today.
        Her hair is black.”"), and before the tag that breaks it ("“That Harlow,” said Tom,
        “with his black hair!”")."""
        quote = self.voices.quote_at(before)
        if quote is None or gender is None:
            return None
        start = self._speech_opening(quote)
        earlier = [m for group, _, _ in self.history for m in group]
        # this sentence's names first: "Marian, … Anne Catherick, poor creature, with her
        # black hair": the one spoken to in an earlier sentence is not the one meant
        for said in (self.mentions, earlier):
            named = {
                entity
                for s, e, entity in said
                if start <= s < before
                and inside(self.quotes, s)
                and not self._vocative(s, e)
                and _compatible(_gender_of(self.cast, entity), gender)
            }
            if named:
                return next(iter(named)) if len(named) == 1 else None
        return None

    def _vocative(self, start: int, end: int) -> bool:
        """Whether the name at `start:end` in speech is one spoken to ("You should know,
        Mary."; "Oh, Mary!"): set off by a comma or the quote's opening, and closed by
        punctuation. The one spoken to is "you", not "she"."""
        opened = self.text[max(0, start - 3) : start].rstrip()
        return (not opened or opened[-1] in ",“‘\"'") and bool(
            _VOCATIVE_CLOSE.match(self.text, end)
        )

    def _speech_opening(self, quote: tuple[int, int]) -> int:
        """Where the speech holding `quote` opens: the quote before it, when only its tag
        stands between ("“That Harlow,” said Tom, “with …”"), else the quote itself."""
        before = [q for q in self.quotes if q[1] <= quote[0]]
        if not before:
            return quote[0]
        gap = self.text[before[-1][1] : quote[0]]
        words = [w.lower() for w in _WORD.findall(gap)]
        if (
            len(words) <= _TAG_WORDS
            and any(w in SPEECH_VERBS for w in words)
            and not _SENTENCE_END.search(gap)
        ):
            return before[-1][0]
        return quote[0]

    def _clause_subject(self, tokens: list[_Tok], at: int, spoken: bool) -> str | None:
        j = self._before_relative(tokens, at)
        gender: Gender | None = None  # of the person noun passed, for "this was a man"
        # words passed that do not count towards the reach: a relative clause, the words of
        # a predicate noun phrase ("was a hearty … gentleman"), an aside between dashes
        skipped = at - 1 - j
        passed_aside = False
        while j >= 0 and at - j - skipped <= _SUBJECT_REACH:
            if not passed_aside and not self._gap_ok(tokens[j], tokens[j + 1]):
                if gender is not None and self._after_colon(tokens, j + 1):
                    # "… came to the door to welcome me: a tall dark young gentleman with …"
                    return self._colon_apposed(tokens, j + 1, gender)
                copula = self._predicate_before_colon(tokens, j)
                if copula is not None and not any(
                    t.low in _POSSESSIVES or t.low in _SUBJECTS or t.low in FIRST_PERSON
                    or t.low in _PERSON_NOUNS or t.low in _RELATIONS or self._mention_at(t)
                    for t in tokens[j + 1 : at]
                ):  # fmt: skip
                    # "he was very handsome: slender, gold-colored, with wavy black hair":
                    # what follows the colon spells out the predicate, its subject's
                    skipped += j - copula
                    j = copula - 1
                    passed_aside = True
                    continue
                aside = self._aside_before(tokens, j)
                if aside is None:
                    break
                # "Old Ransome -- we called him old -- had a shock of grey hair"
                skipped += j - aside
                j = aside
                passed_aside = True
                continue
            passed_aside = False
            if tokens[j].low in _HAVING and j and tokens[j - 1].low == "and":
                # "Little Billee was small and slender, about twenty, and had a straight white
                # forehead veined with blue, large dark-blue eyes": the second verb's subject
                # is the sentence's, however far back
                shared = self._coordinated_subject(tokens, j - 1, spoken)
                if shared is not None:
                    return shared
            if tokens[j].low in _BEARER_NOUNS and self._stranger_article(tokens, j):
                # "I saw a frightful face with cold light blue eyes": the face's, not the
                # seer's ("his face, with its blue eyes" is still his)
                return None
            if tokens[j].low in _PERSON_NOUNS:
                # "the man with black hair" is the man's: only a predicate noun ("this was a
                # hearty, red-faced gentleman, with a shock of hair") leads on to a subject.
                article = self._predicate_article(tokens, j)
                if article is None:
                    # "A small, quiet person with hazel eyes … — such was Ellen Gorringe":
                    # a stranger the paragraph then names as the one in view
                    return self._stranger_of_noun(tokens, j)
                gender = _NOUN_GENDERS.get(tokens[j].low)
                skipped += j - article + 1
                j = article - 1
                continue
            if tokens[j].low in ("this", "that") and gender is not None and not spoken:
                return self._resolve(gender, tokens[j].start)
            entity = self._mention_at(tokens[j])
            if entity and self._looked_at(tokens, j, entity):
                # "she said, looking up at Tito with wide blue eyes": the looker's eyes
                j = self._mention_start(tokens, j, entity) - 1
                continue
            if entity and spoken and self._addressed_after_noun(tokens, j, entity):
                # "A fine full-coloured young woman, Mr Clennam, with very dark hair": the
                # one spoken to, set off by commas, is not the one described
                j = self._mention_start(tokens, j, entity) - 1
                continue
            if entity:
                if tokens[j].low.endswith("'s") and j + 1 < at and self._someone(tokens[j + 1]):
                    return None  # "Mrs. Orchard's baby had blue eyes": the baby's
                if self._compared_with(tokens[j]):
                    # "a wax-dollish young person, no older than Alicia herself, with flaxen
                    # ringlets": the one compared with is not the one described
                    return None
                return entity
            if tokens[j].low in ("i", "you"):
                return self._person(tokens[j])
            if tokens[j].low in ("her", "him") and tokens[j + 1].low == "as" and not spoken:
                # "I remember her as a slim young woman, with black hair"
                return self._resolve("she" if tokens[j].low == "her" else "he", tokens[j].start)
            if tokens[j].low in _SUBJECTS:
                return self._subject_pronoun(tokens[j], spoken)
            if tokens[j].low in ("his", "her") and tokens[j + 1].low in _FIGURE_NOUNS:
                # "his face was broad, with large blue eyes": the face's owner's
                return self._possessor(tokens[j], spoken)
            j -= 1
        return None

    def _denied(self, start: int, end: int) -> bool:
        """Whether the mention at `start`-`end` is denied for another: "not … by Affery,
        but by the girl"."""
        before = self.text[max(0, start - _DENIAL_REACH) : start]
        return bool(_NOT_BEFORE.search(before)) and bool(_BUT_AFTER.match(self.text, end))

    def _addressed_after_noun(self, tokens: list[_Tok], j: int, entity: str) -> bool:
        """Whether the name ending at `tokens[j]` is set off by commas after a noun, in
        speech: "A fine young woman, Mr Clennam, with …" calls Clennam, it does not name
        the woman."""
        start = self._mention_start(tokens, j, entity)
        if start == 0 or j + 1 >= len(tokens):
            return False
        before = self.text[tokens[start - 1].end : tokens[start].start].strip()
        after = self.text[tokens[j].end : tokens[j + 1].start].strip()
        return (
            before == ","
            and after == ","
            and self._plain(tokens[start - 1])
            and tokens[start - 1].low in _PERSON_NOUNS
        )

    def _mention_start(self, tokens: list[_Tok], j: int, entity: str) -> int:
        """The first token of the name ENTITY that `tokens[j]` is part of."""
        while (
            j > 0
            and self._mention_at(tokens[j - 1]) == entity
            and self._gap_ok(tokens[j - 1], tokens[j])
        ):
            j -= 1
        return j

    def _looked_at(self, tokens: list[_Tok], j: int, entity: str) -> bool:
        """Whether the name at `tokens[j]` is the one looked at: "looking up at Tito"."""
        first = self._mention_start(tokens, j, entity)
        k = first - 1
        if k < 1 or tokens[k].low not in ("at", "upon", "into"):
            return False
        k -= 1
        if tokens[k].low in ("up", "down", "round", "across", "back") and k > 0:
            k -= 1
        return tokens[k].low in _LOOKING and all(
            self._gap_ok(tokens[n], tokens[n + 1]) for n in range(k, first)
        )

    def _compared_with(self, tok: _Tok) -> bool:
        """Whether the name holding `tok` follows "than" ("no older than Alicia")."""
        start = next((s for s, e, _ in self.mentions if s <= tok.start < e), tok.start)
        return _THAN_BEFORE.search(self.text, max(0, start - 8), start) is not None

    def _someone(self, tok: _Tok) -> bool:
        """Whether a noun after a name's possessive is another person ("Mrs. Orchard's
        baby", "Jane's brother"), not a part or a thing of theirs ("Jane's head")."""
        return self._plain(tok) and (
            tok.low in _PERSON_NOUNS or tok.low in _KIN or tok.low in _RELATIONS
        )

    def _before_relative(self, tokens: list[_Tok], at: int) -> int:
        """Where a walk back from the verb at `at` to its subject starts: before a relative
        clause between commas that ends at the verb ("Lucinda herself, who stood beneath it
        to receive Mr. Pike, had hair of the palest flaxen"), else just before the verb."""
        if at < 2 or "," not in self.text[tokens[at - 1].end : tokens[at].start]:
            return at - 1
        k = at - 1
        while k > 0 and at - k <= _RELATIVE_SKIP:
            gap = self.text[tokens[k - 1].end : tokens[k].start]
            if _CLAUSE_SEPARATOR.search(gap):
                break
            if tokens[k].low in ("who", "which", "whom") and "," in gap:
                return k - 1
            k -= 1
        return at - 1

    def _aside_before(self, tokens: list[_Tok], j: int) -> int | None:
        """Where the words before an aside between dashes end, when `tokens[j]` closes one
        ("Old Ransome -- we called him old, though I doubt he was fifty -- had"): the aside
        is passed over when it opened after a word of the same sentence."""
        if not _DASH.fullmatch(self.text[tokens[j].end : tokens[j + 1].start].strip()):
            return None
        k = j - 1
        while k >= 0 and tokens[k].start >= self.sentence_start and j - k <= _ASIDE_WORDS:
            gap = self.text[tokens[k].end : tokens[k + 1].start].strip()
            if _DASH.fullmatch(gap):
                return k
            if gap and _CLAUSE_SEPARATOR.search(gap):
                return None
            k -= 1
        return None

    def _adverb(self, tok: _Tok) -> bool:
        """A plain adverb between a verb and what it says: "then", "simply", "indeed"."""
        word = tok.low
        return self._plain(tok) and (
            word in ("then", "now", "still", "indeed", "merely", "only", "just", "certainly")
            or (word.endswith("ly") and len(word) > 4)
        )

    def _predicate_article(self, tokens: list[_Tok], noun: int) -> int | None:
        """Where "a" or "an" opens the noun phrase ending at the person noun `noun`, when a
        verb of being or "as" stands before it ("was a … gentleman", "as a … woman")."""
        k = noun - 1
        while k > 0 and noun - k <= 6 and self._gap_ok(tokens[k], tokens[k + 1]):
            if tokens[k].low == "and" and self._plain(tokens[k - 1]):
                k -= 1  # "was a tall and slender young man": its adjectives joined
                continue
            if tokens[k].low in ("a", "an"):
                verb = k - 1
                while verb > 0 and k - verb <= 3 and self._adverb(tokens[verb]):
                    verb -= 1  # "he was then simply a pallid young man"
                linked = tokens[verb].low in _COPULAS | {"as"} or self._after_colon(tokens, k)
                # "Mr Alec, a young man with hair as red as a fox's": an apposition
                apposed = "," in self.text[tokens[k - 1].end : tokens[k].start] and bool(
                    self._mention_at(tokens[k - 1])
                )
                return k if linked or apposed else None
            if not self._plain(tokens[k]) or tokens[k].low in _PHRASE_MODIFIER_BLOCKERS:
                return None
            k -= 1
        return None

    def _subject_of(
        self, tokens: list[_Tok], i: int, *, idiom: bool = False
    ) -> tuple[str | None, bool]:
        owner, negated = self._subject_walk(tokens, i, idiom=idiom)
        if owner is None and not negated and not idiom:
            owner = (
                self._fronted(tokens, i)
                or self._stranger_named_later(tokens, i)
                or self._set_after_clause(tokens, i)
            )
        return owner, negated

    def _set_after_clause(self, tokens: list[_Tok], i: int) -> str | None:
        """ "He swung down, a tall figure against the grey wall", "He rose slowly—a short,
        thick-set man": a noun phrase set after its clause with a comma or a dash says what
        the clause's subject is, when the sentence opens on that subject, nobody else is
        named, told or called by a noun before it, and no noun phrase ends the clause.
        Outside speech only."""
        if inside(self.quotes, tokens[i].start) or not tokens:
            return None
        noun = self._noun_after(tokens, i)
        if noun not in _PERSON_NOUNS:
            return None
        k = i - 1
        while k > 0 and tokens[k].low not in ("a", "an") and i - k <= _ATTRIBUTIVE_ADJECTIVES_MAX:
            if not self._plain(tokens[k]) or tokens[k].low in _PHRASE_MODIFIER_BLOCKERS:
                return None
            k -= 1
        if k <= 1 or tokens[k].low not in ("a", "an"):
            return None
        gap = self.text[tokens[k - 1].end : tokens[k].start].strip()
        if gap != "," and not _DASH.fullmatch(gap):
            return None
        if any(t.low in _DETERMINERS for t in tokens[max(0, k - 4) : k]):
            # "He sent for the carpenter, a tall man": a noun before the comma may be the
            # one described, and what it names no list tells
            return None
        end = next(n for n in range(i + 1, len(tokens)) if tokens[n].low == noun)
        if end + 1 < len(tokens):
            after = self.text[tokens[end].end : tokens[end + 1].start].strip()
            if not after and tokens[end + 1].low not in _WHERE_PREPOSITIONS | {"against", "of"}:
                return None  # "…, a tall man stood there": a clause of its own
        opener = tokens[0]
        if opener.start > self.sentence_start + 1:
            return None
        if opener.low in ("he", "she"):
            subject = self._resolve(_SUBJECTS[opener.low], opener.start)
        else:
            subject = self._mention_at(opener)
        if subject is None or subject.startswith(_STRANGER):
            return None
        first = 1
        while first < k and self._mention_at(tokens[first]) == subject:
            first += 1
        for word in tokens[first:k]:
            if (
                self._mention_at(word)
                or word.low in _OBJECT_PRONOUNS
                or word.low in _SUBJECTS
                or word.low in ("her", "them", "their", "they", "we", "i", "you")
                or word.low in _PERSON_NOUNS
                or word.low in _KIN
                or inside(self.quotes, word.start)
            ):
                return None  # "He looked at the boy, a tall lad": the boy may be meant
        fits = _compatible(_gender_of(self.cast, subject), _NOUN_GENDERS.get(noun))
        return subject if fits else None

    def _beyond_everyone(self, tokens: list[_Tok], i: int) -> bool:
        """ "taller than any man in the parish", "shorter than all the others"."""
        following = tokens[i + 1 : i + 3]
        return (
            tokens[i].low in _COMPARATIVES
            and not (i and tokens[i - 1].low == "head")  # "a head taller": the idiom's
            and len(following) == 2
            and following[0].low == "than"
            and following[1].low in _EVERYONE
            and self._gap_ok(tokens[i], following[0])
            and self._gap_ok(following[0], following[1])
        )

    def _fronted(self, tokens: list[_Tok], i: int) -> str | None:
        """ "Tall and gaunt, Silas stood at the door", "Very grey-eyed and silent, he
        waited": an adjective phrase opening the sentence, then a comma, describes the
        subject named or told right after it. Outside speech only."""
        if inside(self.quotes, tokens[i].start):
            return None
        if i > _FRONTED_LIST_MAX:
            return None
        for k in range(i):
            gap = self.text[tokens[k].end : tokens[k + 1].start].strip()
            if not self._gap_ok(tokens[k], tokens[k + 1]) or gap not in ("", ","):
                return None
            if tokens[k].low in _FRONTED_FILLERS and not gap:
                continue
            # an earlier item of the list: "Tall, thin, red-haired, and well-favored, he"
            ends_item = gap == "," or tokens[k + 1].low in _FRONTED_FILLERS
            if not ends_item or not self._plain(tokens[k]):
                return None
            if tokens[k].low in _NOT_IN_A_FRONTED_PHRASE or tokens[k].low in _PERSON_NOUNS:
                return None
        if i == 0 and self.text[self.sentence_start : tokens[0].start].strip(" \t\n\"“‘'("):
            return None
        j = i
        item = i  # where the list's current item began
        while True:
            if j + 1 >= len(tokens):
                return None
            gap = self.text[tokens[j].end : tokens[j + 1].start].strip()
            if gap == "," and (
                self._fronted_subject_word(tokens[j + 1]) or j - i >= _FRONTED_LIST_MAX
            ):
                break
            if gap == ",":
                # "Tall, thin, red-haired, and well-favored, he was": a list of them
                j += 1
                item = j
                word = tokens[j]
                if not self._plain(word) or word.low in _NOT_IN_A_FRONTED_PHRASE:
                    return None
                continue
            if gap or j - item >= _FRONTED_WORDS_MAX or j - i >= _FRONTED_LIST_MAX:
                return None
            j += 1
            word = tokens[j]
            if (
                not self._plain(word)
                or word.low in _NOT_IN_A_FRONTED_PHRASE
                or word.low in _PERSON_NOUNS
            ):
                return None
        subject = tokens[j + 1]
        if j + 2 >= len(tokens) or not self._gap_ok(subject, tokens[j + 2]):
            return None  # "Tall, Silas." is no sentence with a verb
        verb = tokens[j + 2]
        if (
            verb.low in SPEECH_VERBS
            or verb.low in _THINKING
            or "," in self.text[subject.end : verb.start]
        ):
            return None  # "Tall grasses, Silas said, hid the path": an aside, not a subject
        entity = self._mention_at(subject)
        if entity:
            return entity
        if subject.low in FIRST_PERSON:
            return self._person(subject)
        if subject.low in _SUBJECTS:
            return self._resolve(_SUBJECTS[subject.low], subject.start)
        return None

    def _fronted_subject_word(self, word: _Tok) -> bool:
        """Whether WORD may be the subject after a fronted phrase: a name, "I" or a
        subject pronoun."""
        return bool(self._mention_at(word)) or word.low in FIRST_PERSON or word.low in _SUBJECTS

    def _stranger_article(self, tokens: list[_Tok], noun: int) -> bool:
        """Whether "a", "an", "that" or "some" opens the phrase of the noun at `noun`, past
        a few describing words: "a frightful face", not "his face"."""
        k = noun - 1
        while k >= 0 and noun - k <= _ATTRIBUTIVE_ADJECTIVES_MAX + 2:
            if tokens[k].low in ("a", "an", "that", "some", "another"):
                # "Malone had a handsome face with grey eyes": one's own face
                return not (k and tokens[k - 1].low in _OWN_FACE_BEFORE)
            if not self._plain(tokens[k]) or not self._gap_ok(tokens[k], tokens[k + 1]):
                return False
            k -= 1
        return False

    def _stranger_of_noun(self, tokens: list[_Tok], noun: int) -> str | None:
        """The one a stranger's noun phrase ("a small, quiet person", "a tall gentleman")
        turns out to be (`_identified_later`), when "a" or "an" opens the phrase."""
        if inside(self.quotes, tokens[noun].start):
            return None
        k = noun - 1
        while k >= 0 and noun - k <= _ATTRIBUTIVE_ADJECTIVES_MAX + 1:
            if tokens[k].low in ("a", "an"):
                gender = _NOUN_GENDERS.get(tokens[noun].low)  # None: "person", either sex
                return self._identified_later(gender, tokens[noun].start)
            if not self._plain(tokens[k]) or not self._gap_ok(tokens[k], tokens[k + 1]):
                return None
            k -= 1
        return None

    def _name_beside(
        self,
        tokens: list[_Tok],
        i: int,
        gender: Gender | None,
        *,
        indefinite: bool,
        subject: bool,
    ) -> str | None:
        """The name set right beside the person noun the value at `i` qualifies: "A
        dark-haired girl, Mary Dunstan, answered", "The tall man—Tom Pinch—bustled", "a
        tall young man named John Harlow", "the tall stranger, whose name was Harlow", and
        with `subject` (the phrase opens its sentence) "The red-haired man at the desk was
        John Harlow".
        Between commas in speech a name may be the one spoken to ("A tall man, John, asked
        for you"), and "the tall man called Harlow over" calls him: neither is read."""
        noun = i + 1
        while tokens[noun].low not in _PERSON_NOUNS:  # `_noun_after` found it
            noun += 1
        at = noun + 1
        if at + 1 >= len(tokens):
            return None
        gap = self.text[tokens[noun].end : tokens[at].start].strip()
        naming = tokens[at].low == "named" or (indefinite and tokens[at].low == "called")
        if naming and not gap:
            at += 1
        elif subject and (copula := self._identifying_copula(tokens, noun)) is not None:
            at = copula + 1  # "The red-haired man at the desk was John Harlow."
        elif _DASH.fullmatch(gap) or (gap == "," and not inside(self.quotes, tokens[at].start)):
            words = [t.low for t in tokens[at : at + 3]]
            if words[:2] == ["whose", "name"] and words[2:] in (["was"], ["is"]):
                at += 3  # "the tall stranger, whose name was Harlow"
        else:
            return None
        if at >= len(tokens) or (at > noun + 1 and not self._gap_ok(tokens[at - 1], tokens[at])):
            return None
        entity = self._mention_at(tokens[at])
        if entity is None or entity.startswith(_STRANGER):
            return None
        end = at
        while end + 1 < len(tokens) and self._mention_at(tokens[end + 1]) == entity:
            end += 1
        if tokens[end].low.endswith("'s"):
            return None  # "a tall girl, Mary's sister": whose she is
        closing = (
            "." if end + 1 == len(tokens) else self.text[tokens[end].end : tokens[end + 1].start]
        )
        if not naming and not _CLOSES_A_NAME.match(closing):
            return None  # "a tall man, Harlow thought, …": the name opens a clause
        return entity if _compatible(_gender_of(self.cast, entity), gender) else None

    def _identifying_copula(self, tokens: list[_Tok], noun: int) -> int | None:
        """Where "was" or "is" follows the noun at `noun`, past a short phrase of where
        or with whom ("at the desk", "beside her"), with nothing but words between."""
        k = noun + 1
        if k < len(tokens) and tokens[k].low in _WHERE_PREPOSITIONS:
            k += 1
            while k < len(tokens) and k - noun <= 5 and tokens[k].low not in ("was", "is"):
                k += 1
        if k >= len(tokens) or tokens[k].low not in ("was", "is"):
            return None
        if not all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(noun, k)):
            return None
        return k

    def _stranger_named_later(self, tokens: list[_Tok], i: int) -> str | None:
        """ "a very short ungainly gentleman … advanced to meet her. This was no other than
        Captain William Dobbin": a stranger described as "a … gentleman" is the one a
        later sentence of the paragraph names as the one in view (`_identified_later`)."""
        if inside(self.quotes, tokens[i].start):
            return None
        noun = self._noun_after(tokens, i)
        if noun not in _PERSON_NOUNS:
            return None
        gender = _NOUN_GENDERS.get(noun or "")  # None: "person", "figure", either sex
        k = i - 1
        while k >= 0 and i - k <= _ATTRIBUTIVE_ADJECTIVES_MAX + 1:
            if tokens[k].low in ("a", "an", "the"):
                indefinite = tokens[k].low != "the"
                opening = tokens[k].start <= self.sentence_start + 1
                apposed = self._name_beside(
                    tokens, i, gender, indefinite=indefinite, subject=opening
                )
                if apposed is not None or not indefinite:
                    return apposed
                return self._identified_later(gender, tokens[i].start)
            if not self._plain(tokens[k]) or not self._gap_ok(tokens[k], tokens[k + 1]):
                return None
            k -= 1
        return None

    def _subject_walk(
        self, tokens: list[_Tok], i: int, *, idiom: bool = False
    ) -> tuple[str | None, bool]:
        """Who a predicate word describes, and whether it is negated: "Basil was tall",
        "Basil, a tall man", "the tall Basil", "he was left-handed", "I was very little",
        "he seemed to me a tall gentleman", "You're not grown so very tall, Miss Jane".
        With `idiom`, `tokens[i]` opens a phrase read whole ("less than the middle
        height", "a giant of a man"): what follows it is the phrase's own."""
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        superlative_of = nxt is not None and nxt.low == "of" and tokens[i].low in _SUPERLATIVES
        if idiom:
            nxt = None
        if (
            nxt is not None
            and nxt.low in ("of", "with", "by", "to", "in", "on", "than")
            and not superlative_of
            and not self._of_stature(tokens, i)
            and not self._beyond_everyone(tokens, i)
        ):
            return None, False
        if nxt is not None and not self.text[tokens[i].end : nxt.start].strip():
            entity = self._mention_at(nxt)
            if entity:
                return entity, False
        spoken = inside(self.quotes, tokens[i].start)
        conceded = self._conceded(tokens, i, spoken)
        if conceded is not None:
            return conceded, False
        linked = False
        negated = False
        # "a sturdy straw-haired man", "his fine, tall person": before a person noun, the
        # other adjectives of its phrase are passed over up to its article or possessive.
        attributive = tokens[i].low in _VALUE_NOUNS or self._noun_after(tokens, i) in _PERSON_NOUNS
        adjectives = 0
        coordinated = 0
        skipped = 0  # words of a relative clause passed over, not counted in the reach
        j = i - 1
        while j >= 0 and i - j - skipped <= 8:
            gap = self.text[tokens[j].end : tokens[j + 1].start]
            if _CLAUSE_BREAK.search(gap):
                if tokens[j + 1].low in ("a", "an") and _DASH.fullmatch(gap.strip()):
                    # "Morgan--an old, grey-haired, mahogany-faced sailor--came forward"
                    return self._mention_at(tokens[j]), negated
                noun = self._noun_after(tokens, i)
                if noun in _PERSON_NOUNS and self._after_colon(tokens, j + 1):
                    # "Mr. Henry came himself to the door: a tall dark young gentleman"
                    return self._colon_apposed(tokens, j + 1, _NOUN_GENDERS.get(noun)), negated
                if not (gap.strip() == "(" and tokens[j + 1].low in ("who", "whose")):
                    return None, False
                # "Captain Rawdon Crawley (who was left-handed, and …)": a relative clause
                # in brackets is read as one between commas
            word = tokens[j]
            if word.low == "being" and tokens[j].start <= self.sentence_start + 1:
                # "Being but five feet four, and stout, I have never cut a dashing figure"
                return self._subject_after_opening(tokens, i), negated
            aside_start = self._comma_aside(tokens, j)
            if aside_start is not None:
                # "he was, in fact, rather above the common height": the aside's words do
                # not count towards the reach
                skipped += j - aside_start + 1
                j = aside_start - 1
                continue
            if word.low == "being" and j and tokens[j - 1].low == "as":
                j -= 1  # "struck me as being a tall, wiry, sly person"
                continue
            if word.low == "being" and j and self._gap_ok(tokens[j - 1], word):
                # "‘Immensely tall!’ Rosa being short.", "Rosa, being short, could not see":
                # the name before "being" is the one it describes
                named = self._mention_at(tokens[j - 1])
                if named:
                    return named, negated
            if (
                word.low == "as"
                and j > 1
                and tokens[j - 1].low in _OBJECT_PRONOUNS
                and tokens[j - 2].low in _STRUCK
            ):
                # "Mrs. Rubelle struck me as a tall, wiry person": how someone struck
                # another is how the teller says they were
                linked = True
                j -= 3
                continue
            if word.low == "as" and self._as_one_must(tokens, j, i):
                # "stirring his gruel with his left hand, as a left-handed man must": the
                # doer is granted to be one
                return self._clause_subject(tokens, j, spoken), negated
            if word.low in _HEDGES:
                return None, False
            if word.low in _NEGATIONS:
                negated = True
                j -= 1
                continue
            entity = self._mention_at(word)
            if entity and linked and self._object_of_a_preposition(word):
                # "Just behind the Marshal stood a short spare man": the one standing comes
                # after the verb; the name before it is where he stood
                return None, False
            if entity:
                # "Basil was left-handed", "Basil, a tall man", "Hallward, left-handed as ever"
                # "Flora, always tall, had grown …": an adverb or two may stand between
                appositive = (
                    "," in gap
                    and i - j <= 3
                    and all(t.low in _ADVERBS or t.low == "ever" for t in tokens[j + 1 : i])
                    and all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(j + 1, i))
                    and not any(
                        "," in self.text[tokens[n].end : tokens[n + 1].start]
                        for n in range(j + 1, i)
                    )
                )
                if linked and "," in gap and (start := self._before_relative(tokens, j + 1)) < j:
                    # "Mr. Jan Coggan, who had passed the cup to Henery, was a short man":
                    # the name in the relative clause is not the subject
                    skipped += j - start
                    j = start
                    continue
                if word.low.endswith("'s") and j + 1 < len(tokens) and self._plain(tokens[j + 1]):
                    # "Liddy, the maltster's great-granddaughter, a tall girl": the one
                    # whose she is is not the one described; the name before is
                    named = self._named_before_apposition(tokens, j + 1) if linked else None
                    return named, negated if named else False
                return (entity if linked or appositive else None), negated
            if word.low in _SUBJECT_COPULAS:
                return self._person(word) or self._pronoun(word, spoken), negated
            if word.low == "turned" and PREDICATE_WORDS.get(tokens[i].low) is HEIGHT:
                return None, False  # "Monks turned short upon the matron": abruptly
            if word.low in _APPEARING and (idiom or PREDICATE_WORDS.get(tokens[i].low) is HEIGHT):
                # "beside Seth's tall figure she looked short … she seemed above the middle
                # height, though in reality she did not exceed it": how tall one looks is
                # beside whom one stands
                return None, False
            if (
                (word.low in FIRST_PERSON or word.low in SECOND_PERSON)
                and j
                and tokens[j - 1].low in _COPULAS
                and "," in self.text[tokens[j - 1].end : word.start]
            ):
                # "he was, I am bound to confess, a very little man": an aside of the
                # speaker's own between the verb and what it says
                linked = False
                j -= 1
                continue
            if word.low in FIRST_PERSON or word.low in SECOND_PERSON:
                return (self._person(word) if linked else None), negated
            if word.low in _SUBJECTS:
                return (self._subject_pronoun(word, spoken) if linked else None), negated
            if word.low == "be" and not (j and tokens[j - 1].low == "to"):
                return None, False  # "will be tall": a prediction, not a description
            if word.low in _OBJECT_PRONOUNS and j and tokens[j - 1].low == "to":
                j -= 2  # "seemed to me a tall gentleman"
                continue
            if (
                word.low in _COPULAS
                or (
                    (
                        word.low in ("a", "an")
                        or (word.low == "the" and tokens[j + 1].low in _SUPERLATIVES)
                        # "said Susan Tall's husband, the short young married man who"
                        or (word.low == "the" and attributive)
                    )
                    and "," in self.text[tokens[j - 1].end : word.start]
                    if j
                    else False
                )
            ):
                linked = True  # "Basil, a tall man", "Angel, the shortest of the three"
            elif (
                linked
                and (word.low in _PERSON_NOUNS or word.low in _RELATIONS or word.low in _KIN)
                and self._plain(word)
                and "," in gap
            ):
                # "stood her father, a short, stout, ruddy, middle-aged man": the apposition
                # is the father's, someone unnamed, not the "her" he is kin to
                return None, False
            elif attributive and word.low in _ATTRIBUTIVE_POSSESSIVES:
                return self._possessor(word, spoken), negated
            elif word.low in ("a", "an", "the"):
                attributive = False
            elif (
                "," in gap
                and not linked
                and word.low in _PERSON_NOUNS
                and (article := self._predicate_article(tokens, j)) is not None
            ):
                # "He was a big man, tall and stout": what follows a predicate noun after a
                # comma is said of the same subject
                j = article
            elif word.low in _ADVERBS or word.low in _SUBJECT_WALK_WORDS:
                pass
            elif (
                word.low in ("have", "has", "had")
                and tokens[j + 1].low == "grown"
                and self._gap_ok(word, tokens[j + 1])
            ):
                # "Silas had grown tall": grown to it, and so it still
                pass
            elif self._been_after(tokens, j) and (
                word.low in ("have", "has") or (word.low == "had" and tokens[i].low in _HANDS)
            ):
                # "for I have been left-handed from a child"; "had been small" may be
                # a childhood long past, but a hand is for life
                pass
            elif (
                attributive
                and adjectives < _ATTRIBUTIVE_ADJECTIVES_MAX
                and self._plain(word)
                and word.low not in _PHRASE_MODIFIER_BLOCKERS
            ):
                adjectives += 1
            elif (
                not linked
                and coordinated < _COORDINATED_MAX
                and (tokens[j + 1].low == "and" or ("," in gap and j + 1 < i))
                and self._plain(word)
                and word.low not in _PHRASE_MODIFIER_BLOCKERS
                and word.low not in _ALL_CUES
            ):
                coordinated += 1  # "Mr. Hyde was pale and tall", "was thin, pale and tall"
            elif linked and (titled := self._titled_subject(tokens, j)) is not None:
                return titled, negated
            elif linked and (named := self._named_before_apposition(tokens, j)) is not None:
                return named, negated
            elif "," in gap and not linked:
                return self._listed_subject(tokens, j, spoken), negated
            else:
                return None, False
            j -= 1
        return None, False

    @staticmethod
    def _been_after(tokens: list[_Tok], j: int) -> bool:
        """Whether "been" follows `tokens[j]`, past adverbs: "had (always) been"."""
        k = j + 1
        while k < len(tokens) and tokens[k].low in _ADVERBS:
            k += 1
        return k < len(tokens) and tokens[k].low == "been"

    def _in_possessive_name(self, tokens: list[_Tok], k: int) -> bool:
        """Whether `tokens[k]` is part of a name in the possessive ("the maltster's")."""
        entity = self._mention_at(tokens[k])
        if entity is None:
            return False
        end = k
        while end + 1 < len(tokens) and self._mention_at(tokens[end + 1]) == entity:
            end += 1
        return tokens[end].low.endswith("'s") and end + 1 < len(tokens)

    def _named_before_apposition(self, tokens: list[_Tok], j: int) -> str | None:
        """ "Lady Constance, the elder, was tall": a short apposition between commas,
        ending at `tokens[j]`, after the name it describes."""
        if j + 1 >= len(tokens) or "," not in self.text[tokens[j].end : tokens[j + 1].start]:
            return None
        k = j
        while k > 0 and j - k < _APPOSITION_WORDS:
            gap = self.text[tokens[k - 1].end : tokens[k].start]
            if _CLAUSE_BREAK.search(gap):
                return None
            if "," in gap:
                if tokens[k].low not in ("the", "a", "an", "his", "her", "my"):
                    return None
                return self._mention_at(tokens[k - 1])
            if self._in_possessive_name(tokens, k):
                k -= 1  # "Liddy, the maltster's great-granddaughter, a tall girl, was"
                continue
            if not self._plain(tokens[k]) or tokens[k].low in _PHRASE_MODIFIER_BLOCKERS - {
                "the",
                "a",
                "an",
                "his",
                "her",
                "my",
                "of",
            }:
                return None
            k -= 1
        return None

    def _as_one_must(self, tokens: list[_Tok], as_at: int, value_at: int) -> bool:
        """Whether "as a <value> man must" (or does, would), or "as <value> men do", runs
        from `as_at` over the value at `value_at`: a concession about the doer, not a
        comparison."""
        generic = as_at + 1 == value_at  # "as left-handed men do": no article, a plural
        if not generic and (tokens[as_at + 1].low not in ("a", "an") or as_at + 1 >= value_at):
            return False
        noun = value_at + 1
        while noun < len(tokens) and noun - value_at <= _ATTRIBUTIVE_ADJECTIVES_MAX + 1:
            if tokens[noun].low in (_GENERIC_KINDS if generic else _PERSON_NOUNS):
                break
            noun += 1
        else:
            return False
        modal = noun + 1
        if modal >= len(tokens) or tokens[modal].low not in _MODALS:
            return False
        # "as a tall woman must," closes there; "as a tall woman might look at a dwarf" is
        # a likeness, not a concession
        return (
            modal + 1 >= len(tokens)
            or not self._gap_ok(tokens[modal], tokens[modal + 1])
            or ("," in self.text[tokens[modal].end : tokens[modal + 1].start])
        )

    def _comma_aside(self, tokens: list[_Tok], j: int) -> int | None:
        """Where an aside between commas that ends at `tokens[j]` begins ("in fact", "I
        think", "indeed"), when it is one of a teller's asides and nothing else."""
        if j + 1 >= len(tokens) or "," not in self.text[tokens[j].end : tokens[j + 1].start]:
            return None
        k = j
        while k >= 0 and j - k < _ASIDE_WORDS_MAX and tokens[k].low in _ASIDE_WORDS_SET:
            if k and "," in self.text[tokens[k - 1].end : tokens[k].start]:
                return k
            k -= 1
        return None

    def _subject_after_opening(self, tokens: list[_Tok], i: int) -> str | None:
        """The subject just after an opening participle's phrase, up to its comma: "Being
        but five feet four, and stout, I have never…"."""
        spoken = inside(self.quotes, tokens[i].start)
        for k in range(i + 1, min(i + _OPENING_WORDS, len(tokens))):
            if not self._gap_ok(tokens[k - 1], tokens[k]):
                return None
            if "," not in self.text[tokens[k - 1].end : tokens[k].start]:
                continue
            subject = self._subject_word(tokens[k], spoken)
            if subject is not None:
                return subject
        return None

    def _titled_subject(self, tokens: list[_Tok], j: int) -> str | None:
        """ "Mr. Utterson the lawyer was": a name with its calling in apposition."""
        if j < 2 or tokens[j - 1].low != "the" or not self._plain(tokens[j]):
            return None
        if not all(self._gap_ok(tokens[n], tokens[n + 1]) for n in (j - 2, j - 1)):
            return None
        if "," in self.text[tokens[j - 2].end : tokens[j].start]:
            return None
        return self._mention_at(tokens[j - 2])

    def _noun_after(self, tokens: list[_Tok], i: int) -> str | None:
        """The person noun or cue that the adjectives from `tokens[i]` on describe: "man" in
        "a short, strong, heavy, nut-brown man", "figure" in "his tall, spare figure"."""
        for n in range(i + 1, min(i + 2 + _ATTRIBUTIVE_ADJECTIVES_MAX * 2, len(tokens))):
            if not self._gap_ok(tokens[n - 1], tokens[n]):
                return None
            word = tokens[n]
            if word.low in _PLACE_WORDS or self._mention_at(word):
                return None  # "a little behind Lady Harriet": where, beside whom
            if word.low in _PERSON_NOUNS or word.low in _ALL_CUES:
                return word.low
            if word.low in _PHRASE_MODIFIER_BLOCKERS - {"and"} or not self._plain(word):
                return None
        return None

    def _conceded(self, tokens: list[_Tok], i: int, spoken: bool) -> str | None:
        """ "left-handed as I am", "tall as he was": a concession states what it grants,
        where "as tall as I am" only compares."""
        if i + 3 >= len(tokens) or tokens[i + 1].low != "as" or tokens[i + 3].low not in _COPULAS:
            return None
        if (i and tokens[i - 1].low in ("as", "so")) or tokens[i + 3].low == "be":
            return None
        if not all(self._gap_ok(tokens[n], tokens[n + 1]) for n in range(i, i + 3)):
            return None
        return self._subject_word(tokens[i + 2], spoken)

    def _of_ones_own(self, tokens: list[_Tok], cue: int) -> str | None:
        """ "those bright blue eyes of yours", "these grey eyes of mine", "those great grey
        eyes of hers": the possessive after the feature says whose it is."""
        if cue + 2 >= len(tokens) or tokens[cue + 1].low != "of":
            return None
        of, own = tokens[cue + 1], tokens[cue + 2]
        if not (self._gap_ok(tokens[cue], of) and self._gap_ok(of, own)):
            return None
        if own.low in ("yours", "mine"):
            return self._person(own)
        gender = _INDEPENDENT_POSSESSIVES.get(own.low)
        if gender is None:
            return None
        if own.low == "his" and cue + 3 < len(tokens):
            after = tokens[cue + 3]
            joined = not self.text[own.end : after.start].strip()
            if joined and not (
                after.low in _COPULAS
                or after.low in _HAVING
                or after.low in ("and", "that", "which", "as")
                or after.low.endswith("ing")
            ):
                return None  # "the violet eyes of his slim wife": his wife's
        if inside(self.quotes, own.start):
            return self._named_in_speech(gender, own.start)
        return self._resolve(gender, own.start)

    def _possessor(self, word: _Tok, spoken: bool) -> str | None:
        """Whose "his", "her", "my" or "your" this is."""
        if word.low in FIRST_PERSON or word.low in SECOND_PERSON:
            return self._person(word)
        gender = _POSSESSIVES.get(word.low)
        if spoken:
            return self._named_in_speech(gender, word.start)
        return self._resolve(gender, word.start)

    def _listed_subject(self, tokens: list[_Tok], j: int, spoken: bool) -> str | None:
        """ "she was a woman of robust frame, square-shouldered and strong-limbed, not
        tall": a predicate in a comma list shares the subject of the list's head, "she was
        a …" or "she was stout, …". Only plain describing words may stand in the list (no
        name, pronoun, verb of another clause or hedge), and the head's complement must be a
        noun phrase of its own ("a woman of robust frame") or a few plain words."""
        k = j
        while k >= 0 and j - k <= _LIST_WORDS_MAX:
            word = tokens[k]
            if k < j and _CLAUSE_BREAK.search(self.text[word.end : tokens[k + 1].start]):
                return None
            if self._mention_at(word) or word.low in _LIST_STOPPERS or word.low in _HEDGES:
                return None
            if word.low in _COPULAS:
                return self._list_head(tokens, k, spoken)
            k -= 1
        return None

    def _list_head(self, tokens: list[_Tok], verb: int, spoken: bool) -> str | None:
        end = verb + 1
        while end < len(tokens) and "," not in self.text[tokens[end - 1].end : tokens[end].start]:
            end += 1
        complement = tokens[verb + 1 : end]
        if not complement:
            return None
        if complement[0].low in ("a", "an"):
            allowed_inside = {"of"}
            if any(
                w.low in _PHRASE_MODIFIER_BLOCKERS and w.low not in allowed_inside
                for w in complement[1:]
            ):
                return None
        elif len(complement) > 3 or any(w.low in _PHRASE_MODIFIER_BLOCKERS for w in complement):
            return None
        subject = verb - 1
        if subject >= 0 and tokens[subject].low in _ADVERBS - {"a", "an", "the", "of"}:
            subject -= 1
        if subject < 0 or not self._gap_ok(tokens[subject], tokens[verb]):
            return None
        return self._subject_word(tokens[subject], spoken)

    def _coordinated_subject(self, tokens: list[_Tok], and_at: int, spoken: bool) -> str | None:
        """The subject the sentence opens on ("Little Billee was …"), when "and" at
        `and_at` joins a second verb to its first and nobody else is named, told or called
        by a person noun between them."""
        if and_at < 2 or not self._gap_ok(tokens[0], tokens[1]):
            return None
        if tokens[0].start > self.sentence_start + 2:
            return None  # the sentence's first word must be its subject
        subject = self._subject_word(tokens[0], spoken)
        if subject is None:
            return None
        end = 0
        while end + 1 < and_at and self._mention_at(tokens[end + 1]) == subject:
            end += 1  # the name's other words: "Little Billee"
        verb = tokens[end + 1]
        if verb.low not in _COPULAS and verb.low not in _HAVING:
            return None
        for word in tokens[end + 2 : and_at]:
            if (
                self._mention_at(word)
                or word.low in _SUBJECTS
                or word.low in _POSSESSIVES
                or word.low in _OBJECT_PRONOUNS
                or word.low in _PERSON_NOUNS
            ):
                return None
        return subject

    def _subject_word(self, word: _Tok, spoken: bool) -> str | None:
        """Whom one word standing as a subject means: a name, "I" or "you", or "he"/"she"
        outside speech."""
        entity = self._mention_at(word)
        if entity:
            return entity
        if word.low in FIRST_PERSON or word.low in SECOND_PERSON:
            return self._person(word)
        if word.low in _SUBJECTS:
            return self._subject_pronoun(word, spoken)
        return None

    def _subject_pronoun(self, word: _Tok, spoken: bool) -> str | None:
        """Whom "he", "she" or "they" as a subject means: in narration as `_resolve` says;
        in speech "he" or "she" only, the one person of that sex the speech has named
        ("“I know John Harlow well; he has blue eyes”")."""
        gender = _SUBJECTS[word.low]
        if not spoken:
            return self._resolve(gender, word.start)
        return self._named_in_speech(gender, word.start) if gender in ("he", "she") else None

    def _pronoun(self, word: _Tok, spoken: bool) -> str | None:
        """ "he's", "she's" as a subject (in speech, of the one the speech names)."""
        gender = _SUBJECTS.get(word.low.split("'")[0])
        if gender is None or (spoken and gender == "they"):
            return None
        return (
            self._named_in_speech(gender, word.start)
            if spoken
            else self._resolve(gender, word.start)
        )

    def _resolve(self, gender: Gender | None, before: int) -> str | None:
        """The one person a pronoun can mean: named earlier in this sentence, else in the
        nearest of the four sentences before it in the paragraph; never a name in dialogue,
        and nobody when "him" shows a second man in play ("Henry looked at him. His...")."""
        if self._in_opening_participle(gender, before):
            # "Speaking in her softest voice, surveying Mrs. Wragge with a sweet smile …
            # and a melting interest in her handsome black eyes, the housekeeper told her":
            # the phrase's "her" is its doer's, who is named after it, not the one surveyed
            return None
        clause = self._clause_start(before)
        # "To Ursula she had always given pleasure": the one a phrase opening on a
        # preposition names just before "she" is not she ("herself" would say so)
        fronted = self._fronted_object(before)
        in_clause = {
            entity
            for s, e, entity in self.mentions
            if clause <= s
            and e <= before
            and not inside(self.quotes, s)
            and _compatible(_gender_of(self.cast, entity), gender)
            and entity != fronted
        }
        if len(in_clause) == 1 and not self._second_person(gender, clause, before, self.mentions):
            # "his friend Mr. Darcy soon drew the attention of the room by his fine, tall
            # person": the one person named in the pronoun's own clause, unless that one is
            # looking at someone unnamed ("the man westward, and Clare could discern that he
            # was tall").
            (entity,) = in_clause
            bound = self._bound_to_subject(gender, clause, entity, before)
            if bound is not None:
                # "she stood staring at Robert Audley, her blue eyes glittering": the
                # clause's "she" owns the phrase, and is not the one she stares at
                return bound or None
            if self._stranger_nearer(gender, entity, clause, before):
                # "Mr. Beebe's last vision was of the garden-child clasping it like a lover,
                # his dark head buried in a wealth of blossom": the child's head
                return None
            looking = [e for s, e, n in self.mentions if n == entity and clause <= s < before]
            if (
                all(self._perceives(e) for e in looking)
                and (
                    self._unnamed_before(gender, before)
                    # "Agatha was dressed first … Miriam heard her greet the lad gaily, knew
                    # how brilliant her grey eyes became": the one heard, named without a
                    # card, is the one described
                    or self._uncarded_named(0, clause)
                )
                # "Hoseason looked me in the face out of his cold grey eyes": the eyes
                # one looks out of or with are one's own
                and not _LOOKING_THROUGH.search(self.text, max(clause, before - 16), before)
            ):
                return None
            return entity
        if not in_clause and gender in ("he", "she") and self._uncarded_doer(clause, before):
            # "So Solomon, holding his white head": someone without a card, doing what the
            # pronoun's phrase tells, is the one meant; nobody earlier is
            return None
        here = (
            [m for m in self.mentions if m[1] <= before and m[2] != fronted],
            self.sentence_start,
            before,
        )
        groups = (here, *reversed(self.history[-_SENTENCES_BACK:]))
        for nearest, (group, start, end) in enumerate(groups):
            told = [
                (s, e, entity)
                for s, e, entity in group
                if not inside(self.quotes, s)
                and _compatible(_gender_of(self.cast, entity), gender)
                # "Like Gloria, she seemed never to change": the one compared with is not
                # the one meant
                and not _COMPARED_BEFORE.search(self.text, max(0, s - 12), s)
            ]
            names = {entity for _, _, entity in told}
            if names:
                if len(names) > 1 or self._second_person(gender, start, end, group):
                    return None
                if any(self._denied(s, e) for s, e, _ in told):
                    # "This refection was not presided over by Affery, but by the girl who
                    # …": the one the sentence denies is not the one it goes on about
                    return None
                (entity,) = names
                if nearest > 0 and self._unnamed_in_sentence(gender, before):
                    # "Stevie blacked the boots. … and for a central figure a young man
                    # wearing his Sunday best, with a straw hat on his dark head"
                    return None
                first = min(s for s, _, _ in told)
                if (
                    nearest > 0
                    and self._opens_on_unnamed(gender, start, first)
                    and all(
                        _OBJECT_OF_PREPOSITION.search(self.text, max(start, s - 14), s)
                        for s, _, _ in told
                    )
                ):
                    # "The young man, who supported her on his arm, instantly lost himself …
                    # in the unexpected presence of the Mississippian. His handsome blue
                    # eyes": the sentence before was the unnamed man's, the named one only
                    # where he was, so "his" may be either's ("The oldest son, Ambroz--…
                    # came out" and "where Dr. Lanyon sat" name the one they are about)
                    return None
                if self._opens_on_another(gender, start, first) or (
                    nearest > 0
                    and _AFTER_PREPOSITION.search(self.text, max(start, first - 8), first)
                    and self._subject_before(gender, start, first)
                ):
                    # "His nearest relatives were Sir Felix and Henrietta … His hair was
                    # red": the "his" the sentence opens on is not Sir Felix's, so another
                    # man is in view, and the paragraph's "he" is likelier his: the
                    # sentences before say whose
                    continue
                if self._named_as_object_after(gender, entity, before):
                    # "The first moment he set his dew-bright black eye on Dickon": the
                    # clause's "he" is not the one he sets his eye on (the robin is)
                    return None
                if nearest > 0 and self._acted_on_before(gender, start, end):
                    # "he had … taught Strether that …. He had done … in his thick black
                    # hair": the sentence before told of a "he" doing something to the one
                    # it named, and this one goes on with that "he", not with him
                    return None
                if self._someone_else_carried(gender, entity):
                    # "She obeyed; went and returned … He was talking to Mrs. Bretton when
                    # she came back … to see her, with her tiny stature": a "she" opened the
                    # paragraph before Mrs. Bretton was named, and it was someone else
                    return None
                if self._stranger_beside(gender, start, before):
                    # "It was Bob's wife who opened the door to Maggie. She was a tiny
                    # woman": someone unnamed of that sex, in the sentence that names the
                    # one person, may as well be the one meant
                    return None
                if all(self._perceives(e) for _, e, _ in told):
                    # "Jane Fairfax was very elegant … Emma could not but feel all this; and
                    # then, her face": the one who looks is seldom the one described; the
                    # one other person of that sex just named is, when there is one.
                    others = self._others_before(entity, gender, groups[nearest + 1 :])
                    if self._unnamed_before(gender, before):
                        return None
                    if others:
                        return next(iter(others)) if len(others) == 1 else None
                return entity
        return (
            self._in_focus(gender, before)
            or self._carried(gender, before)
            or self._named_after(gender, before)
        )

    def _fronted_object(self, before: int) -> str | None:
        """Who a preposition names right before the subject "he" or "she" at `before`
        ("To Ursula she had …", "With Tom, he went …"): someone the subject is not."""
        if not _PRONOUN_SUBJECT_ANYWHERE.match(self.text, before):
            return None
        for s, e, entity in self.mentions:
            if (
                e <= before
                and not self.text[e:before].strip(" ,")
                and _FRONTING_PREPOSITION.search(self.text, max(0, s - 10), s)
            ):
                return entity
        return None

    def _acted_on_before(self, gender: Gender | None, start: int, end: int) -> bool:
        """Whether this sentence opens on "He" (or "She") and the sentence at `start:end`
        shows a "he" of that sex doing something to someone it names after it in the same
        clause ("he had … taught Strether"): two of that sex, and this one goes on with the
        unnamed."""
        subject = _SUBJECT_PRONOUN.get(gender or "")
        if subject is None or not subject.match(self.text, self.sentence_start):
            return False
        named = [
            s
            for s, _, entity in self._mentions_between(start, end)
            if _compatible(_gender_of(self.cast, entity), gender)
        ]
        return any(
            m.end() < s
            and not _NEW_CLAUSE.search(self.text, m.end(), s)
            and not self.text[m.end() : s].strip().startswith(",")
            # "I was sure he must be Long John": who he is, not what he did to another
            and not _BEING.search(self.text, m.end(), s)
            for m in subject.finditer(self.text, start, end)
            if not inside(self.quotes, m.start())
            for s in named
        )

    def _mentions_between(self, start: int, end: int) -> list[tuple[int, int, str]]:
        """The names the paragraph's earlier sentences give between `start` and `end`."""
        return [m for group, _, _ in self.history for m in group if start <= m[0] < end]

    def _in_opening_participle(self, gender: Gender | None, before: int) -> bool:
        """Whether the pronoun at `before` stands in the participle phrase a sentence opens
        on ("Speaking softly, surveying Mrs. Wragge with … her black eyes, the
        housekeeper …"), past a name in it and before any "he" or "she" of its own."""
        if gender not in ("he", "she") or inside(self.quotes, before):
            return False
        opening = _OPENING_PARTICIPLE.match(self.text, self.sentence_start)
        if opening is None or opening.group(1).lower() in _NOT_PARTICIPLES:
            return False
        named = [s for s, _, _ in self.mentions if opening.end() <= s < before]
        if not named:
            return False
        if _INVERTED_BEFORE.search(self.text, opening.end(), named[0]):
            return False  # "Pacing up and down … was Farmer Boldwood himself, his grey head"
        # the main clause has begun once a subject stands ("Saving for the smile, I felt
        # sure that Miss Havisham's face could not smile, nor her pale blue eyes")
        return _ANY_SUBJECT.search(self.text, opening.end(), before) is None

    def _opens_on_another(self, gender: Gender | None, start: int, named: int) -> bool:
        """Whether the sentence at `start` opens in narration on "His" (or "Her") before its
        first name at `named`: that possessive means someone else than the name. ("He"
        opening it was tried too: it lost three held-out facts, where the name after is
        the "he" himself.)"""
        if gender not in ("he", "she") or inside(self.quotes, start):
            return False
        opening = _OPENING_PRONOUN[gender].match(self.text, start)
        return opening is not None and opening.end() <= named

    def _opens_on_unnamed(self, gender: Gender | None, start: int, named: int) -> bool:
        """Whether the sentence at `start`, or a clause of it after a semicolon, colon or
        dash, opens in narration on someone unnamed of GENDER as its subject ("The young
        man, who …", "; the young man"), before its first name at `named`."""
        if gender not in ("he", "she") or inside(self.quotes, start):
            return False
        # the sentence's own start, or a clause's after a semicolon, a colon or a dash
        starts = [start, *(m.end() for m in _CLAUSE_SEPARATOR.finditer(self.text, start, named))]
        for at in starts:
            if inside(self.quotes, at):
                continue
            opening = _OPENS_UNNAMED[gender].match(self.text, at)
            if opening is not None and opening.end() <= named:
                return True
        return False

    def _subject_before(self, gender: Gender | None, start: int, named: int) -> bool:
        """Whether "he" (or "she") of GENDER is a subject in narration between a sentence's
        start and its first name at `named`."""
        if gender not in ("he", "she"):
            return False
        return any(
            not inside(self.quotes, found.start())
            for found in _SUBJECT_PRONOUN[gender].finditer(self.text, start, named)
        )

    def _bound_to_subject(
        self, gender: Gender | None, clause: int, entity: str, before: int
    ) -> str | None:
        """When the clause opens on "he" or "she" of the pronoun's sex and names ENTITY only
        after it ("She stood staring at George, her eyes …"), the pronoun's phrase belongs to
        that subject, who is not the ENTITY named after it (else "at herself"): the one the
        subject pronoun means, "" for nobody known; None when the clause has no such
        subject."""
        if gender not in ("he", "she"):
            return None
        named = [s for s, _, n in self.mentions if n == entity and clause <= s < before]
        if not named:
            return None
        subject = self._opening_pronoun(gender, clause, named[0])
        if subject is None:
            return None
        # ENTITY itself when the subject was ENTITY all along: the name after it is then
        # someone else of that name ("she is the daughter of old Peake")
        return self._resolve(gender, subject) or ""

    def _opening_pronoun(self, gender: Gender, clause: int, until: int) -> int | None:
        """Where "he"/"she" of GENDER stands in narration between `clause` and `until`, with
        no name before it in the clause ("George said she …": the name leads); None if not."""
        found = _SUBJECT_PRONOUN[gender].search(self.text, clause, until)
        if found is None or inside(self.quotes, found.start()):
            return None
        if any(clause <= s < found.start() for s, _, _ in self.mentions):
            return None
        return found.start()

    def _stranger_nearer(
        self, gender: Gender | None, entity: str, clause: int, before: int
    ) -> bool:
        """Whether someone unnamed of the pronoun's sex (or a child) stands between ENTITY's
        last mention in the clause and the pronoun, other than in apposition to ENTITY
        ("Edward, a tall young man, …") or said to be ENTITY ("Peter was a lean lad")."""
        nearer = _NEARER_STRANGER.get(gender or "")
        if nearer is None:
            return False
        last = max(e for s, e, n in self.mentions if n == entity and clause <= s < before)
        for found in nearer.finditer(self.text, last, before):
            if not _APPOSITION.match(self.text[last : found.start()]):
                return True
        return any(
            not inside(self.quotes, found.start())
            for found in _POSSESSED_DARLING.finditer(self.text, last, before)
        )

    def _named_as_object_after(self, gender: Gender | None, entity: str, before: int) -> bool:
        """Whether the pronoun's clause opens on "he"/"she" of its sex and names ENTITY only
        after the pronoun ("he set his eye on Dickon"): then the subject is someone else."""
        if gender not in ("he", "she"):
            return False
        clause = self._clause_start(before)
        if self._opening_pronoun(gender, clause, before) is None:
            return False
        if any(clause <= s < before for s, _, _ in self.mentions):
            return False
        ends = _CLAUSE_SEPARATOR.search(self.text, before, self.sentence_end)
        end = ends.start() if ends else self.sentence_end
        return any(n == entity and before <= s < end for s, _, n in self.mentions)

    def _in_focus(self, gender: Gender | None, before: int) -> str | None:
        """ "Until Margaret had learnt the times … she was very unfortunate. They came
        rushing along … She did not mind … But she dreaded … her grey eyes": past the four
        sentences a pronoun looks back, the one person of its sex the paragraph named stays
        the one meant while every sentence since speaks of someone of that sex ("she",
        "her dress", outside speech), and nobody else of that sex is named (with a card or
        without), stands there unnamed ("a woman", "her aunt") or shows as an object ("her"
        after a verb)."""
        if gender not in ("he", "she") or len(self.history) <= _SENTENCES_BACK:
            return None
        subject = _SUBJECT_WORD[gender]

        def speaks_of(start: int, end: int) -> bool:
            found = subject.finditer(self.text, start, end)
            return any(not inside(self.quotes, m.start()) for m in found)

        for _, start, end in self.history[-_SENTENCES_BACK:]:
            if not speaks_of(start, end):
                return None
        for group, start, end in reversed(self.history[:-_SENTENCES_BACK]):
            names = {
                entity
                for s, _, entity in group
                if not inside(self.quotes, s) and _compatible(_gender_of(self.cast, entity), gender)
            }
            if len(names) > 1:
                return None
            if names:
                (entity,) = names
                if _gender_of(self.cast, entity) != gender:
                    return None  # only a card that states its pronouns counts
                if _ONE_UNNAMED_PERSON[gender].search(self.text, start, before):
                    return None
                if _OBJECTS[gender].search(self.text, start, before):
                    return None
                if self._uncarded_named(start, before):
                    return None  # "Bessy", whom no card names, may be the one meant
                return entity
            if not speaks_of(start, end):
                return None
        return None

    def _perceives(self, name_end: int) -> bool:
        """Whether the name ending at `name_end` is the subject of a verb of looking or
        judging: "which Emma particularly admired", "Emma could not but feel"."""
        following = _WORD.finditer(self.text, name_end, name_end + _PERCEIVER_REACH)
        for count, word in enumerate(following):
            if _CLAUSE_BREAK.search(self.text, name_end, word.start()):
                return False
            low = word.group(0).lower()
            if low in _PERCEPTION_VERBS:
                # "Molly felt herself colour all over": what one feels of oneself is no
                # look at another
                after = _WORD.search(self.text, word.end())
                return after is None or after.group(0).lower() not in _REFLEXIVES
            if count >= _PERCEIVER_WORDS or low not in _PERCEIVER_FILLERS:
                return False
        return False

    def _someone_else_carried(self, gender: Gender | None, entity: str) -> bool:
        """Whether the paragraph opens on someone of `gender` ("She obeyed; went and
        returned") before it names `entity`, and that someone, carried over from the
        paragraphs before, is not known to be `entity`."""
        subject = _SUBJECT_WORD.get(gender or "")
        if subject is None:
            return False
        first = min((s for s, e in self.told if e == entity), default=None)
        if first is None:
            return False
        opening = subject.match(self.text, len(self.text) - len(self.text.lstrip()))
        if opening is None or self._carried(gender, first) == entity:
            return False
        # named only as someone spoken to or of ("talking to Mrs. Bretton"), the paragraph's
        # subject stays the one it opened on
        return bool(_NAMED_AS_OBJECT.search(self.text, max(0, first - 12), first))

    def _stranger_beside(self, gender: Gender | None, start: int, end: int) -> bool:
        """Whether `start:end` (narration) holds someone of `gender` it does not name, as
        the subject of a clause or brought in by "it was" or "there was": "It was Bob's
        wife who opened the door to Maggie", "it was a stranger who was pursuing me", "the
        woman looked up". Not "Tom was a good man" nor "to admire in her father"."""
        unnamed = _ONE_UNNAMED_PERSON.get(gender or "")
        if unnamed is None:
            return False
        for found in unnamed.finditer(self.text, start, end):
            if inside(self.quotes, found.start()) or found.group(0)[0].isupper():
                continue  # "My dear Sister, —": one addressed, or a title
            if _NAME_AFTER.match(self.text, found.end()):
                continue  # "my sister Anne": the name's own
            reach = self.text[max(start, found.start() - 60) : found.start()]
            if _BROUGHT_IN.search(reach):
                return True
            opening = _CLAUSE_OPENING.search(self.text, start, found.start())
            clause = opening.end() if opening else start
            if _AS_SUBJECT.fullmatch(self.text, clause, found.start()) and not _OF_AFTER.match(
                self.text, found.end()
            ):
                return True
        return False

    def _unnamed_in_sentence(self, gender: Gender | None, before: int) -> bool:
        """Whether someone unnamed of `gender` ("a young man") is brought in in narration in
        the pronoun's own sentence before it, not as what someone is or looks like ("he
        looked like a sensible young man"), nor by age ("in his youth")."""
        unnamed = _ONE_UNNAMED_PERSON.get(gender or "")
        if unnamed is None:
            return False
        if any(
            not inside(self.quotes, found.start())
            for found in _ONE_OF_SEVERAL.finditer(self.text, self.sentence_start, before)
        ):
            # "There were three little girls under twelve; one of them had an orange
            # marigold in her black hair": one of several, unnamed
            return True
        return any(
            not inside(self.quotes, found.start())
            and not found.group(0)[0].isupper()
            and not _NAME_AFTER.match(self.text, found.end())
            and _INDEFINITE_BEFORE.search(self.text, self.sentence_start, found.start())
            and not _PREDICATE_BEFORE.search(self.text, self.sentence_start, found.start())
            for found in unnamed.finditer(self.text, self.sentence_start, before)
        )

    def _unnamed_before(self, gender: Gender | None, before: int) -> bool:
        """ "The dawn shone on the man westward, and Clare could discern that he was tall":
        someone unnamed of that sex, earlier in the paragraph, may be the one looked at."""
        unnamed = _UNNAMED_PERSON.get(gender or "")
        return unnamed is not None and unnamed.search(self.text, 0, before) is not None

    def _others_before(
        self,
        entity: str,
        gender: Gender | None,
        groups: Sequence[tuple[list[tuple[int, int, str]], int, int]],
    ) -> set[str]:
        """Who else of `gender` was named in narration before: in the paragraph's earlier
        sentences or the paragraphs just before it (someone unnamed spoken of counts)."""
        earlier = {e for group, _, _ in groups for s, _, e in group if not inside(self.quotes, s)}
        earlier |= {e for names in self.earlier for e in names}
        return {
            other
            for other in earlier
            if other != entity and _compatible(_gender_of(self.cast, other), gender)
        }

    def _second_person(
        self,
        gender: Gender | None,
        start: int,
        end: int,
        mentions: Sequence[tuple[int, int, str]],
    ) -> bool:
        """Whether `start:end` shows a second person of `gender` in play: "him", "them" or
        "her" as the object of a clause whose subject is a person of that gender named
        there ("Henry looked at him", "Miss Havisham beckoned her to come close"), for in
        "Dr. Livesey came in. I followed him" he is the one man still."""
        objects = _OBJECTS.get(gender or "")
        if objects is None:
            return False
        named = [
            s
            for s, _, e in mentions
            if start <= s < end and _compatible(_gender_of(self.cast, e), gender)
        ]
        return any(
            any(s < m.start() and not _NEW_CLAUSE.search(self.text, s, m.start()) for s in named)
            for m in objects.finditer(self.text, start, end)
            # "Mr. Lamb drew the inkstand towards him": a place by the subject, himself
            if not _LOCATIVE_BEFORE.search(self.text, max(start, m.start() - 16), m.start())
        )

    def second_persons(self) -> frozenset[str]:
        """Someone of each sex the paragraph's narration shows beside another of that sex
        by "he … him" or "she … her" in one clause ("when he held him away to look at
        him"), or speaking unnamed ("replied the lady"), as a stranger: a pronoun opening the
        next paragraph ("He was a tall boy", "She was very pretty") may mean either. (A name
        before "him" is a weaker sign: "an indictment denouncing him" after "Charles Darnay"
        is Darnay still.)"""
        speakers: set[str] = set()
        for found in _UNNAMED_SPEAKER.finditer(self.text):
            if inside(self.quotes, found.start()):
                continue
            noun = (found.group("noun") or found.group("noun2")).lower()
            # "returned the other": the other of two, whichever sex they are
            speakers |= {"he", "she"} if noun == "other" else {_NOUN_GENDERS[noun]}
        return frozenset(
            _STRANGER + sex
            for sex in ("he", "she")
            if sex in speakers
            or any(self._two_of(sex, start, end) for _, start, end in self.history)
        )

    def _two_of(self, sex: str, start: int, end: int) -> bool:
        for subject in _SUBJECT_PRONOUN[sex].finditer(self.text, start, end):
            if inside(self.quotes, subject.start()):
                continue
            reach = min(end, subject.end() + _TWO_OF_REACH)
            found = _OBJECTS[sex].search(self.text, subject.end(), reach)
            if found is None or inside(self.quotes, found.start()):
                continue
            if not _NEW_CLAUSE.search(self.text, subject.end(), found.start()):
                return True
        return False

    def _uncarded_doer(self, start: int, before: int) -> bool:
        """Whether a given name without a card opens the participle phrase the pronoun at
        `before` stands in: "So Solomon, holding his white head"."""
        # a participle's phrase is short: look no further back than a line's length
        found = _NAME_AND_PARTICIPLE.search(self.text, max(start, before - 80), before)
        if found is not None:
            name = found.group(1)
            if name not in self.cast.name_tokens() and is_given_name(name):
                return True
        # "As the evening grew late, Norton, smarting under the repeated charges …, clutching
        # his chair …, his gray eyes snapping": a surname, no word of the dictionary, mid-
        # sentence and not after a preposition, doing what the phrases tell
        found = _NAME_AND_PARTICIPLES.search(self.text, max(start, before - 240), before)
        if found is None or found.start(1) == self.sentence_start:
            return False
        name = found.group(1)
        return (
            name not in self.cast.name_tokens()
            and not is_common_word(name.lower())
            and not _AFTER_PREPOSITION.search(
                self.text, max(start, found.start(1) - 8), found.start(1)
            )
        )

    def _uncarded_named(self, start: int, end: int) -> bool:
        """Whether someone without a card is named between `start` and `end`: a titled
        name ("Mrs. Boucher"), a given name mid-sentence ("and Bessy said") or opening one
        before its verb ("Agatha was dressed first")."""
        carded = self.cast.name_tokens()
        for found in TITLED_NAME.finditer(self.text, start, end):
            if found.group("title").lower() in SAINT_TITLES or names_a_thing(self.text, found):
                continue  # "the living of St. Ewold": a parish, a church, a day
            if found.group("name") not in carded:
                return True
        for found in _NAMED_SPEAKER.finditer(self.text, start, end):
            # "‘I am glad you think so,’ returned Doyce": a speaker no card names
            word = found.group("name")
            if word not in carded and word.lower() not in HONORIFICS and not is_common_word(word):
                return True
        for found in _CAPITALISED.finditer(self.text, start, end):
            word = found.group(0)
            if word in carded or word.lower() in HONORIFICS or not is_given_name(word):
                continue  # "Mr" of "Mr. Slope" is in the list of given names, but a title
            opening = self.text[max(0, found.start() - 3) : found.start()]
            if not _SENTENCE_OPENING.search(opening):
                return True  # mid-sentence: a name, not a sentence's first word
            if _VERB_AFTER_NAME.match(self.text, found.end()):
                return True  # "Agatha was dressed first": a sentence's subject
        return False

    def _carried(self, gender: Gender | None, before: int) -> str | None:
        """ "He went on as a statue would" opening a paragraph: the one person of that
        gender named in the narration of the nearest earlier paragraph (at most two back)
        to name anyone who could be meant, when this paragraph names nobody who could be
        meant before the pronoun and shows no second person in play ("him", "the boy").
        Only a card that states its pronouns counts: an unknown gender could be anyone."""
        if gender not in ("he", "she") or not self.earlier:
            return None
        if any(s < before and _compatible(_gender_of(self.cast, e), gender) for s, e in self.told):
            return None
        if _OBJECTS[gender].search(self.text, 0, before):
            return None  # "him" or "her" here may be anyone
        if _someone_unnamed(gender, self.text, before):
            return None  # "the boy in buttons entered … behind his small black figure"
        if self._uncarded_named(0, before):
            # "simpered Martha, one of the little kitchen-maids; and her beady black eyes":
            # someone no card names, named here, may be the one meant
            return None
        for nearest, names in enumerate(self.earlier):
            fitting = {e for e in names if _compatible(_gender_of(self.cast, e), gender)}
            if fitting:
                known = {e for e in fitting if _gender_of(self.cast, e) == gender}
                if len(fitting) == 1 and known:
                    return next(iter(known))
                if (
                    nearest == 0
                    and self.closing_subject in known
                    and not any(e.startswith(_STRANGER) for e in fitting)
                ):
                    # "… regarded her as Leonora's daughter. And Nancy was a queer girl.¶
                    # She was tall": the subject the last paragraph closed on goes on
                    return self.closing_subject
                return None
        return None

    def _named_after(self, gender: Gender | None, before: int) -> str | None:
        """ "Her hair was black, her eyes a deep blue … Miss Challis did not appear to
        notice": a pronoun nobody before it can answer (in this paragraph or the two before)
        means the one person of its gender the paragraph's narration names after it."""
        if gender not in ("he", "she"):
            return None
        if any(
            _compatible(_gender_of(self.cast, e), gender) for names in self.earlier for e in names
        ):
            return None
        if any(s < before and _compatible(_gender_of(self.cast, e), gender) for s, e in self.told):
            return None
        if _OBJECTS[gender].search(self.text, 0, before):
            return None
        if _UNNAMED_PERSON[gender].search(self.text, 0, before):
            # "A handsome man leaned idly from the lattice. He looked … with a pair of bold
            # black eyes … The man was Sergeant Troy": the stranger, once named, is he
            return self._identified_later(gender, before)
        later = {
            e for s, e in self.told if s > before and _compatible(_gender_of(self.cast, e), gender)
        }
        if len(later) != 1:
            return None
        (entity,) = later
        return entity if _gender_of(self.cast, entity) == gender else None

    def _identified_later(self, gender: Gender | None, before: int) -> str | None:
        """The one person of `gender` the paragraph names after `before`, when it names
        them as the one already in view: "This was no other than Captain William Dobbin",
        "The man was Sergeant Troy", "It was Mr. Shuan". Nobody else of that sex may be
        named between."""
        if gender not in ("he", "she", None):
            return None
        later = [
            (s, e)
            for s, e in self.told
            if s > before and _compatible(_gender_of(self.cast, e), gender)
        ]
        if not later:
            named = self.named_next
            # the next paragraph opens by naming them: "… advanced to meet her.¶This was
            # no other than Captain William Dobbin"
            if named and (gender is None or _gender_of(self.cast, named) == gender):
                return named
            return None
        start, entity = later[0]
        if gender is not None and _gender_of(self.cast, entity) != gender:
            return None
        opening = self.text[max(before, start - _IDENTIFYING_REACH) : start]
        return entity if _IDENTIFYING.search(opening) else None

    def _clause_start(self, before: int) -> int:
        """Where the clause holding offset `before` begins in its sentence: after the last
        semicolon, colon, dash or bracket (commas join a clause's own phrases)."""
        separators = _CLAUSE_SEPARATOR.finditer(self.text, self.sentence_start, before)
        breaks = [m.end() for m in separators]
        return breaks[-1] if breaks else self.sentence_start


#: A paragraph's narration ending on a colon leads into the speech that follows: "he went
#: on:", "she continued thus:".
_LEADS_INTO_SPEECH = re.compile(r":\s*$")
#: How a person without a card is named among the cast's mentions: "?he" for "Mr. Collins".
_STRANGER = "?"
_STRANGER_GENDERS: dict[str, Gender] = {"he": "he", "she": "she", "they": "they"}


def _people(cast: Cast, text: str) -> list[tuple[int, int, str]]:
    """The cast's mentions (a titled slip, "Dr. Livesy", is the doctor still) and the titled
    strangers ("Mr. Collins") in `text`, in order: a pronoun with a stranger in play is not
    pinned on the one carded person nearby."""
    named, strangers = cast.people(text)
    return sorted(named + [(start, end, _STRANGER + (g or "")) for start, end, g in strangers])


def _spoken_of(text: str, quotes: Sequence[tuple[int, int]]) -> frozenset[str]:
    """Someone unnamed each paragraph's speech talks of ("“She is indeed, miss,”
    answered Charley"): "she" in speech is a woman in play besides the one who speaks, so a
    pronoun in the next paragraph is not carried to the speaker alone."""
    spoken: set[str] = set()
    for start, end in quotes:
        for gender, pronoun in _SPOKEN_PRONOUNS.items():
            if pronoun.search(text, start, end):
                spoken.add(_STRANGER + gender)
    return frozenset(spoken)


def _fronted_subjects(
    text: str, mentions: Sequence[tuple[int, int, str]], quotes: tuple[tuple[int, int], ...]
) -> frozenset[str]:
    """Someone unnamed the paragraph's narration makes a subject right after a phrase
    naming another ("To Ursula she had always given pleasure"): a woman in play besides
    Ursula, so the next paragraph's "Her eyes were blue" is not carried to Ursula alone."""
    found: set[str] = set()
    for start, end, _ in mentions:
        if inside(quotes, start) or not _FRONTING_PREPOSITION.search(
            text, max(0, start - 10), start
        ):
            continue
        subject = _PRONOUN_AFTER_NAME.match(text, end)
        if subject is not None:
            found.add(_STRANGER + subject.group(1).lower())
    return frozenset(found)


def _unnamed_subjects(text: str, quotes: tuple[tuple[int, int], ...]) -> frozenset[str]:
    """Someone unnamed a sentence of the paragraph's narration opens on ("The man glanced
    up."): a man in play besides the one it names, so the next paragraph's "“Good
    evening,” he called … He had blue eyes" is not carried to the named one."""
    found: set[str] = set()
    for gender, pattern in _UNNAMED_SUBJECT.items():
        if any(not inside(quotes, m.start()) for m in pattern.finditer(text)):
            found.add(_STRANGER + gender)
    return frozenset(found)


#: Verbs that say who someone is: "he must be Long John", "she was Miss Temple".
_BEING = re.compile(r"\b(?:is|was|be|been|being|seemed|seems|proved|became|looked\s+like)\b")
#: A subject "he" or "she" right after a name: "To Ursula she had".
_PRONOUN_AFTER_NAME = re.compile(r",?\s*([Hh]e|[Ss]he)\b")
_SPOKEN_PRONOUNS: dict[str, re.Pattern[str]] = {
    "he": re.compile(r"\b(?:he|him|his|himself)\b", re.IGNORECASE),
    "she": re.compile(r"\b(?:she|her|hers|herself)\b", re.IGNORECASE),
}


def _opens_on_pronoun(
    text: str, quotes: tuple[tuple[int, int], ...], told: Sequence[tuple[int, str]]
) -> bool:
    """Whether the paragraph's narration speaks of "he" or "she" before it names anyone."""
    first = min((s for s, _ in told), default=len(text))
    return any(
        not inside(quotes, found.start())
        for found in _PRONOUN_SUBJECT_ANYWHERE.finditer(text, 0, first)
    )


def _gender_of(cast: Cast, entity: str) -> Gender | None:
    if entity.startswith(_STRANGER):
        return _STRANGER_GENDERS.get(entity[len(_STRANGER) :])
    return cast.genders.get(entity)


#: Someone in play without a name: a pronoun carried over from an earlier paragraph may
#: mean them as well as anyone named there.
#: One person of each sex, unnamed ("the stranger", "her aunt").
_ONE_UNNAMED: dict[str, str] = {
    "he": "man gentleman boy lad fellow youth stranger servant footman butler coachman father "
    "brother son uncle husband master king lord priest doctor officer soldier sailor clerk "
    "visitor driver landlord waiter porter companion",
    "she": "woman lady girl maid maiden lass mother sister daughter aunt wife mistress queen "
    "housekeeper nurse governess widow stranger servant visitor landlady companion",
}
#: Someone new brought in: "it was a stranger", "there was a woman at the door", "it was
#: Bob's wife".
_BROUGHT_IN = re.compile(
    r"\b(?:it|there|this|that)\s+(?:was|is|were|came)\s+(?:(?:a|an|the|some|[A-Z]\w*['’]s|"
    r"his|her|their)\s+)?(?:[a-z][\w-]*,?\s+){0,3}$",
    re.IGNORECASE,
)
#: Where a clause begins within a sentence: after a stop, a semicolon, a colon, a dash, or
#: a comma with a conjunction.
_STOP = r"(?:(?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bDr)(?<!\bSt)\.|[;:!?—–]|--)"
_CLAUSE_OPENING = re.compile(
    rf"(?:{_STOP}|,\s+(?:and|but|while|when|as|then|so)\b)[\s\"“”'’]*(?!.*(?:{_STOP}"
    r"|,\s+(?:and|but|while|when|as|then|so)\b))",
    re.DOTALL,
)
#: Words between a determiner and its person noun: adjectives, never a preposition, a
#: pronoun or another determiner ("Bingley's attention to her sister" is no subject).
_ADJECTIVE_ONLY = (
    r"(?:(?!(?:to|of|in|on|at|by|with|for|from|her|his|their|its|the|a|an|and|or|that|"
    r"who|which)\b)[a-z][\w-]*,?\s+){0,3}"
)
#: A person noun as its clause's subject: "A woman looked up", "and his wife said", "Bob's
#: wife opened the door". Not after "the": "The poor girl's wretchedness" is as often
#: the one just named.
_AS_SUBJECT = re.compile(
    r"[\s\"“”'’(]*(?:(?i:and|but|then|so|when|while|as)\s+)?(?:(?:(?i:a|an|his|her|their|"
    r"my|our|your)|[A-Z]\w*['’]s)\s+)" + _ADJECTIVE_ONLY,
)
_OF_AFTER = re.compile(r"\s+of\b")
_NAME_AFTER = re.compile(r"[ \t]+[A-Z][a-z]")
#: Also in play, though no one of them alone: several ("the men"), or one addressed ("sir").
_MORE_UNNAMED = {"he": "men gentlemen sir", "she": "women ladies"}


def _any_word(words: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(words.split()) + r")\b", re.IGNORECASE)


_THAN_BEFORE = re.compile(r"\bthan\s+$", re.IGNORECASE)
#: "Like Gloria, she …", "…, unlike Mrs. Shelby": a name compared with, not the one meant
#: (never the verb: "I did not like Mr. Ashby", nor "a man like Mr. Casaubon", him).
_COMPARED_BEFORE = re.compile(r"(?:^|[,;:(—–]\s*|--\s*|[.!?]\s+)(?:[Ll]ike|[Uu]nlike)\s+$")
#: "he" or "she" outside speech, as a paragraph's first subject.
_PRONOUN_SUBJECT_ANYWHERE = re.compile(r"\b(?:[Hh]e|[Ss]he)\b(?!['’-])")
#: How far after "he" a "him" shows a second man in the same clause ("he held him away").
_TWO_OF_REACH = 30
#: Someone unnamed who may own a pronoun's phrase more nearly than a name before them.
_NEARER_STRANGER: dict[str, re.Pattern[str]] = {
    sex: _any_word(f"{words} child infant baby") for sex, words in _ONE_UNNAMED.items()
}
#: Someone of either sex named by whose darling they are, in narration: "Miss Pross …,
#: taking off her darling's bonnet …, and smoothing her rich hair": Lucie's hair.
_POSSESSED_DARLING = re.compile(r"\b(?:her|his|their)\s+darling\b", re.IGNORECASE)
#: ", a tall young man," or "was a lean lad" or ", who was a short man," after a name:
#: the same person.
_APPOSITION = re.compile(
    r"^['’]?s?\s*(?:,\s*(?:who|that)?|\s)\s*(?:(?:was|is|were|seemed|looked|became)\b"
    r"(?:\s+[\w-]+){0,3}?)?\s*"
    r"(?:a|an|the)\s+"
    r"(?:[\w-]+,?\s+){0,4}$",
    re.IGNORECASE,
)
#: Men or women in general are nobody in play: "there were few men in England capable of
#: such exertions", "like most women".
_GENERIC_PLURAL = "".join(rf"(?<!\b{q} )" for q in "few many most all no other such".split())
_UNNAMED_PERSON: dict[str, re.Pattern[str]] = {
    sex: re.compile(
        r"\b(?:"
        + "|".join(words.split())
        + "|"
        + _GENERIC_PLURAL
        + "(?:"
        + "|".join(_MORE_UNNAMED[sex].split())
        + r"))\b",
        re.IGNORECASE,
    )
    for sex, words in _ONE_UNNAMED.items()
}
#: One of several, unnamed: "one of them", "one of the girls".
_ONE_OF_SEVERAL = re.compile(
    r"\b[Oo]ne\s+of\s+(?:them|us|you|(?:the|those|these|his|her|their)\s+(?:[a-z]+\s+){0,2}"
    r"(?:girls|boys|men|women|ladies|gentlemen|children|sisters|brothers|daughters|sons|"
    r"friends|servants|maids|guests|visitors|strangers|dancers|people|twins|party))\b"
)
#: One person of a sex, unnamed: a second candidate for "she" a paragraph keeps in focus
#: (a plural is not: "the girls would comment on her dress").
_ONE_UNNAMED_PERSON: dict[str, re.Pattern[str]] = {
    sex: _any_word(words) for sex, words in _ONE_UNNAMED.items()
}
#: The noun phrase of someone unnamed after its article, by sex: "young man", "woman".
_UNNAMED_AFTER_ARTICLE: dict[str, str] = {
    sex: r"\s+(?:[a-z]+,?\s+){0,2}(?:" + "|".join(words.split()) + r")\b"
    for sex, words in _ONE_UNNAMED.items()
}
#: A sentence opening on someone unnamed: "The man glanced up", "A woman bustled out".
_UNNAMED_SUBJECT: dict[str, re.Pattern[str]] = {
    sex: re.compile(r"(?:^|[.!?]\s+)(?:The|A|An)" + phrase)
    for sex, phrase in _UNNAMED_AFTER_ARTICLE.items()
}
#: A sentence or a clause opening on someone unnamed, matched where it starts: "The young
#: man, who …", "; the young man".
_OPENS_UNNAMED: dict[str, re.Pattern[str]] = {
    sex: re.compile(r"[\s\"“”'‘’(]*(?:[Tt]he|[Aa]n?)" + phrase)
    for sex, phrase in _UNNAMED_AFTER_ARTICLE.items()
}
#: "She was a very pretty girl", "a very pretty figure of a girl": the noun says what the
#: pronoun's person is, not who else is there.
_PREDICATE_OF_PRONOUN = re.compile(
    r"\b(?:he|she)\s+(?:was|is|seemed|became)\s+(?:(?:quite|still|then|now)\s+)?"
    # "a very pretty figure of a girl", "a slip of a girl": the noun after "of a" too
    r"(?:a|an)\s+(?:[\w-]+,?\s+){0,4}(?:of\s+(?:a|an)\s+(?:[\w-]+,?\s+){0,2})?$",
    re.IGNORECASE,
)


def _closing_subject(
    text: str,
    history: Sequence[tuple[list[tuple[int, int, str]], int, int]],
    quotes: tuple[tuple[int, int], ...],
) -> str | None:
    """The one person a paragraph's last sentence names in narration, when the sentence
    opens on that name ("And Nancy was a queer girl; …")."""
    if not history:
        return None
    mentions, start, _ = history[-1]
    told = [(s, entity) for s, _, entity in mentions if not inside(quotes, s)]
    if len({entity for _, entity in told}) != 1 or len(told) != len(mentions):
        return None
    first, entity = min(told)
    if entity.startswith(_STRANGER) or not _SUBJECT_OPENING.fullmatch(text, start, first):
        return None
    return entity


#: What may stand before a sentence's subject: "And Nancy was", "But Nancy".
_SUBJECT_OPENING = re.compile(r"[\s\"“‘'(]*(?:(?:And|But|Then|So|Now|Yet)\s+)?")


def _someone_unnamed(gender: str, text: str, before: int) -> bool:
    """Whether someone unnamed of GENDER is in play before `before` ("the boy in buttons
    entered", "The tall colonel, livid, with his coal-black ringlets"), leaving out a noun
    that only says what a "he" or "she" is."""
    found_all = [*_UNNAMED_PERSON[gender].finditer(text, 0, before)]
    if gender == "he":
        found_all += _RANK_UNNAMED.finditer(text, 0, before)
    return any(not _PREDICATE_OF_PRONOUN.search(text, 0, found.start()) for found in found_all)


#: A man by his rank or calling, unnamed: "the tall colonel", "the Colonel" (never "Colonel
#: Sotillo", which names him).
_RANK_UNNAMED = re.compile(
    r"\b(?:colonel|captain|major|general|sergeant|corporal|lieutenant|admiral|commander|"
    r"squire|judge|bishop|magistrate|governor|prisoner)\b"
    r"|\b[Tt]he\s+(?:Colonel|Captain|Major|General|Sergeant|Lieutenant|Admiral|Squire|"
    r"Judge|Bishop|Governor)\b(?!\s+[A-Z])"
)


#: Where a clause opens after another: "the door opened, and Lily Bart appeared".
_CLAUSE_OPENS = re.compile(r"(?:[,;]\s*(?:and|but)|;)$")
#: Verbs after which "Lily appeared, tall and noble" says how someone came into view.
_ENTERING = frozenset("appeared entered stood emerged reappeared".split())
#: What may follow a name set beside a description: "A dark-haired girl, Mary Dunstan,".
_CLOSES_A_NAME = re.compile(r"\s*(?:[,;.!?)]|--|—|–)")
#: The plural nouns of "as left-handed men do".
_GENERIC_KINDS = frozenset("men women people folk folks persons".split())
#: What closes a name spoken to: "Mary," "Mary!" "Mary."
_VOCATIVE_CLOSE = re.compile(r"\s*[,.!?;]")
#: The longest speech tag between two quotes of one speech: "said Mr. Harlow, smiling".
_TAG_WORDS = 6
#: What ends a sentence between two quotes (so the second is a speech of its own).
_SENTENCE_END = re.compile(r"[.!?]")
#: How far before "short" a speech may stand for it to be the speech that is short.
_BRIEF_REACH = 40
#: What may be short besides a person: said of a speech, "short" is brief.
_BRIEF_THINGS = re.compile(
    r"\b(?:speech|speeches|sermon|address|answer|reply|letter|visit|stay|interview|story|"
    r"conversation|notice|shrift|temper|commons|supply|breath)\b",
    re.IGNORECASE,
)
#: Words that open a noun phrase.
_DETERMINERS = frozenset(
    "a an the his her its their my our your this that these those some any every each".split()
)
#: Where or with whom someone stands, between a noun and what names them: "The
#: red-haired man at the desk was John Harlow".
_WHERE_PREPOSITIONS = frozenset("at in by on near beside behind with before".split())
#: What a figure seen before it is named is called: "The tall form was that of Gabriel Oak".
_FORM_NOUNS = frozenset("form figure shape".split())
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
#: After "dark" said of eyes: a participle beside it, or "with" and a feeling (not "with
#: long lashes"), makes it a look, not a colour.
_DARK_WITH_FEELING = re.compile(
    r"(?:\s*,\s*|\s+and\s+)[a-z]+ing\b"
    r"|\s+with\s+(?![\w\s]{0,20}\b(?:lashes|brows|eyebrows|lids)\b)"
)
#: A group a superlative ranks within: "of whom Bell was the tallest", "of the two".
_OF_WHOM = re.compile(r"\bof\s+whom\b", re.IGNORECASE)
_OF_THE_TWO = re.compile(r"\bof\s+the\s+(?:two|pair)\b|\bof\s+(?:them\s+)?both\b", re.IGNORECASE)
#: Hurts told beside "black eyes": the eyes were blacked in a fight.
_HURTS = (
    r"(?:(?:bloody|bleeding|broken|swollen|split|cut)\s+(?:nose|noses|lip|lips|head|heads|"
    r"shin|shins)|bruises|scratches)"
)
_HURTS_AFTER = re.compile(rf"\s*(?:,|and|or)\s+(?:a\s+|two\s+)?{_HURTS}\b", re.IGNORECASE)
_HURTS_BEFORE = re.compile(rf"\b{_HURTS}\s*(?:,|and|or)\s+(?:a\s+|two\s+)?$", re.IGNORECASE)
#: A preposition opening a phrase before a name: "To Ursula", "with Tom".
_FRONTING_PREPOSITION = re.compile(
    r"(?:^|\s)(?:[Tt]o|[Ww]ith|[Ff]or|[Ff]rom|[Bb]eside|[Bb]ehind|[Nn]ear|[Ll]ike|[Uu]nlike|"
    r"[Tt]owards?|[Aa]gainst|[Aa]mong)\s+$"
)
#: A name in a preposition's phrase: "a quarter of an hour's start of Chauvelin".
_AFTER_PREPOSITION = re.compile(r"\b(?:of|from|than|to|with|at|by|for)\s+$")
#: A name as a preposition's object: "in the presence of the Mississippian".
_OBJECT_OF_PREPOSITION = re.compile(
    r"\b(?:of|from|than|to|with|at|by|for|on|upon|in|into|towards?)\s+(?:the\s+)?$"
)
#: After "little" or "small": a grown person's, granted ("little, though evidently full
#: grown"), so a stature, not a child's size.
_GROWN_CONCESSION = re.compile(
    r",?\s*(?:though|although|yet|but)\s+(?:\w+\s+){0,2}(?:full[- ]grown|grown[- ]up|a\s+woman|"
    r"a\s+man)\b"
)
#: Before "a face": it is the subject's own ("had a handsome face", "with a round face").
_OWN_FACE_BEFORE = frozenset("has had have having with was is were".split())
#: "a young man", "an old woman": someone brought in, unnamed.
_INDEFINITE_BEFORE = re.compile(r"\b(?:a|an)\s+(?:[\w-]+,?\s+){0,3}$", re.IGNORECASE)
#: ... and not what someone is: "he was a tall young man", "looked like a sensible man".
_PREDICATE_BEFORE = re.compile(
    r"\b(?:was|is|were|are|seemed|seems|became|looked|looks|like|as|be|been|being)\s+"
    r"(?:\w+\s+)?(?:a|an)\s+(?:[\w-]+,?\s+){0,3}$",
    re.IGNORECASE,
)
#: What eyes and hair may belong to besides a person: "a frightful face with cold eyes".
_BEARER_NOUNS = frozenset(
    "face countenance visage head creature beast brute monster animal apparition".split()
)
#: A verb straight after a sentence's first word, which makes that word its subject.
_VERB_AFTER_NAME = re.compile(
    r"\s+(?:was|had|has|is|said|came|went|ran|sat|stood|looked|turned|took|gave|made)\b"
)
_SENTENCE_OPENING = re.compile(r"[.!?:;\"“”‘’(—–-]\s*$")
#: A clause's subject pronoun: "he" or "she" alone (not "his", "her").
_SUBJECT_PRONOUN: dict[str, re.Pattern[str]] = {
    "he": re.compile(r"\b[Hh]e\b(?!['’-])"),
    "she": re.compile(r"\b[Ss]he\b(?!['’-])"),
}
#: Someone unnamed who speaks: "replied the lady", "the gentleman asked".
_SPOKEN = "|".join(sorted(SPEECH_VERBS))
_SPEAKER_NOUNS = "lady|woman|girl|gentleman|man|boy|other"
#: "not presided over by Affery, but by the girl": a mention denied for another.
_NOT_BEFORE = re.compile(r"\bnot\b[^,.;:!?“”\"]*$")
_BUT_AFTER = re.compile(r",?\s+but\b")
_DENIAL_REACH = 40
#: Someone named as the one who speaks: "returned Doyce".
_NAMED_SPEAKER = re.compile(rf"\b(?:{_SPOKEN})\s+(?P<name>[A-Z][a-z]+)\b(?![’'-])")
_UNNAMED_SPEAKER = re.compile(
    rf"\b(?:{_SPOKEN})\s+the\s+(?P<noun>{_SPEAKER_NOUNS})\b"
    rf"|\b[Tt]he\s+(?P<noun2>{_SPEAKER_NOUNS})\s+(?:{_SPOKEN})\b"
)
#: A sentence opening on a participle: "Speaking in her softest voice, surveying …".
_OPENING_PARTICIPLE = re.compile(r"[\s\"“‘'(]*([A-Z][a-z]+ing)\b")
#: A verb before the name: the sentence is inverted, and the name is its subject.
_INVERTED_BEFORE = re.compile(r"\b(?:was|were|is|are|stood|sat|came|lay|walked|rode)\s+$")
_ANY_SUBJECT = re.compile(r"\b(?:I|[Ww]e|[Yy]ou|[Hh]e|[Ss]he|[Tt]hey)\b(?!['’-])")
_NOT_PARTICIPLES = frozenset(
    "saving during nothing something everything anything morning evening king spring string "
    "according notwithstanding concerning regarding considering including".split()
)
#: A sentence's first word a possessive of each sex: "His nearest relatives were …".
_OPENING_PRONOUN: dict[str, re.Pattern[str]] = {
    "he": re.compile(r"[\s\"“‘'(]*His\b(?!['’-])"),
    "she": re.compile(r"[\s\"“‘'(]*Her\b(?!['’-])"),
}
#: A pronoun of each sex as a subject or a possessive (an object "her" or "him" shows a
#: second person instead: `_OBJECTS`).
_SUBJECT_WORD: dict[str, re.Pattern[str]] = {
    "he": re.compile(r"\b(?:[Hh]e|[Hh]is)\b"),
    "she": re.compile(r"\b(?:[Ss]he|[Hh]er)\b"),
}
#: Between a name and an object pronoun: another clause, or another subject, begins.
#: What opens another clause, with a subject of its own: "Miss Pellew was nineteen, and
#: though nobody would have called her a beauty" is no second woman.
_NEW_CLAUSE = re.compile(
    r"[;:!?()“”\"—–]|--|\b(?:I|he|she|we|you|they|who|which|though|although|because|while|"
    r"when|nobody|somebody|everybody|everyone|anyone|people|whatever|whoever|however)\b"
)
_LOCATIVE_BEFORE = re.compile(
    r"\b(?:towards|toward|beside|behind|around|round|about|near|in\s+front\s+of)\s+$",
    re.IGNORECASE,
)
_OBJECT_HER = re.compile(
    r"\bher\b(?=\s*(?:[,.;:!?—–”\")]|$|(?:to|and|in|with|at|on|as|by|for|from|into|up|"
    r"down|out|away|back|off|over|that|when|so|again|now|too|once|here|there|but|or|if|"
    r"the|a|an|his|my|your|their|our|this)\b))",
    re.MULTILINE,
)
#: A second person of a pronoun's gender shows as an object: "him", "them", "her".
_OBJECTS: dict[str, re.Pattern[str]] = {
    "he": re.compile(r"\bhim\b"),
    "they": re.compile(r"\bthem\b"),
    "she": _OBJECT_HER,
}


def _compatible(known: Gender | None, wanted: Gender | None) -> bool:
    if wanted == "they":
        return known == "they"
    return known is None or wanted is None or known == wanted


#: What a text states about a cast, remembered for the texts read most recently: every run
#: over an unchanged manuscript reads the same scenes, and one run reads a scene twice (the
#: canon checker, then the continuity role). Statements are immutable, so sharing is safe.
_STATEMENTS_KEPT: Final = 256
_statements: OrderedDict[tuple[str, object, str | None], tuple[Statement, ...]] = OrderedDict()
_statements_lock = threading.Lock()


def statements_in(text: str, cast: Cast, narrator: str | None = None) -> list[Statement]:
    """Every description the text gives of someone in the cast; `narrator` is who "I" is
    outside dialogue (a journal's or letter's heading names its own writer)."""
    key = (text, cast.key, narrator)
    with _statements_lock:
        found = _statements.get(key)
        if found is not None:
            _statements.move_to_end(key)
            return list(found)
    found = tuple(_Reader(read_document(text), cast, narrator).statements())
    with _statements_lock:
        _statements[key] = found
        while len(_statements) > _STATEMENTS_KEPT:
            _statements.popitem(last=False)
    return list(found)


@dataclass(frozen=True)
class FactCheck:
    fact: Fact
    kind: FactKind | None
    reason: str

    @property
    def checkable(self) -> bool:
        return self.kind is not None


def plan_checks(facts: Sequence[Fact]) -> list[FactCheck]:
    checks = []
    for fact in facts:
        kind, reason = checkability(fact.attribute, fact.value)
        checks.append(FactCheck(fact, kind, reason))
    return checks


def find_conflicts_in(
    path: str, text: str, checks: Sequence[FactCheck], cast: Cast, narrator: str | None = None
) -> tuple[list[Conflict], list[Statement]]:
    """Contradictions of checkable facts, and every statement that agrees with one."""
    wanted = {
        (c.fact.entity, c.kind.attribute): (c, c.kind.card_classes(c.fact.value))
        for c in checks
        if c.kind is not None
    }
    conflicts: list[Conflict] = []
    agreeing: list[Statement] = []
    seen: set[tuple[str, str, int, str]] = set()
    for statement in statements_in(text, cast, narrator):
        entry = wanted.get((statement.entity, statement.kind.attribute))
        if entry is None:
            continue
        check, canon = entry
        if statement.classes & canon:
            agreeing.append(statement)
            continue
        if statement.kind is HAIR and statement.classes == {"grey"}:
            # "his grizzled head" of a man whose card says black: hair greys as the story's
            # years pass, so grey against another colour is no contradiction (the other
            # way, a black-haired youth of a white-haired card's man, still is one: a
            # card is written of the person as the book mostly shows them)
            continue
        key = (statement.entity, statement.kind.attribute, statement.line, statement.words)
        if key in seen:
            continue
        seen.add(key)
        conflicts.append(
            Conflict(
                statement.entity,
                statement.kind.attribute,
                check.fact.value,
                statement.words,
                path,
                statement.line,
                statement.sentence,
                statement.quote,
            )
        )
    return conflicts, agreeing


#: What the text may contradict itself on where no card states it: eyes and handedness are
#: for life; hair, but not going grey; never height (a child of chapter 2 is tall by 20).
_SELF_CHECKED = ("eyes", "hair", "handedness")


def contradictions_in_text(
    read: Sequence[tuple[str, Statement]], checks: Sequence[FactCheck]
) -> list[Conflict]:
    """Where no card states a person's eyes, hair or hand, the text against itself: the
    value most passages give (the first, on a tie) is the person's, and a passage that
    gives one that cannot be the same ("black" against "golden"; not "dark" against
    "brown") contradicts it. Said in the negative ("not blue") or of hair going grey, it
    counts for nothing."""
    carded = {(c.fact.entity, c.kind.attribute) for c in checks if c.kind is not None}
    said: dict[tuple[str, str], list[tuple[str, Statement]]] = {}
    for path, statement in read:
        key = (statement.entity, statement.kind.attribute)
        if key[1] not in _SELF_CHECKED or key in carded or statement.words.startswith("not "):
            continue
        if key[1] == "hair" and "grey" in statement.classes:
            continue
        said.setdefault(key, []).append((path, statement))
    found: list[Conflict] = []
    for (entity, attribute), passages in said.items():
        if len(passages) < 2:
            continue
        agreeing = [
            sum(1 for _, other in passages if other.classes & statement.classes)
            for _, statement in passages
        ]
        first = agreeing.index(max(agreeing))
        path, established = passages[first]
        for where, statement in passages:
            if statement.classes & established.classes:
                continue
            found.append(
                Conflict(
                    entity,
                    attribute,
                    established.words,
                    statement.words,
                    where,
                    statement.line,
                    statement.sentence,
                    statement.quote,
                    against=f"{path}:{established.line}",
                )
            )
    return found
