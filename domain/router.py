"""task_router per appendix E: deterministic word and pattern matching, no model.

A pattern is a phrase matched word by word on stems (whole words: "mistakes" is not
"stakes"; "summarising" is "summarize"), or a regex when written `/like this/`. The most
specific recipe wins: its matched words weigh more the fewer recipes use them. Ties go to
the longer pattern, then to the recipe id first in sort order, and say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import snowballstemmer
from pydantic import JsonValue

from controlroom.domain import router_examples
from controlroom.domain.recipe import Recipe
from controlroom.domain.router_clauses import HOW, clause_weights, clauses
from controlroom.domain.run_events import RoutingDecision

_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:md|markdown|txt))\b")
_QUOTED_PATH = re.compile(r"\.(?:md|markdown|txt)$", re.IGNORECASE)
_QUOTED = re.compile(r"[\"“]([^\"”]+)[\"”]")
_UNIT = r"(scene|chapter|chap\.?|ch\.?|scn\.?|sc\.?)"
_NUMBER = (
    r"(\d+|[ivxlc]+\b|"
    + "|".join(
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
    + r")"
)
_SINGLE = re.compile(rf"\b{_UNIT}\s+#?{_NUMBER}", re.IGNORECASE)
_RANGE = re.compile(
    rf"\b{_UNIT}s\s+#?{_NUMBER}\s*(?:-|–|to|through|and)\s*#?{_NUMBER}", re.IGNORECASE
)
_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}
_WHOLE = re.compile(
    r"\b(manuscript|whole book|whole novel|all (?:the )?(?:scenes|chapters))\b", re.I
)


def _number(text: str) -> int | None:
    lowered = text.lower()
    if lowered.isdigit():
        return int(lowered)
    if lowered in _WORDS:
        return _WORDS[lowered]
    values = [_ROMAN.get(ch) for ch in lowered]
    if not values or None in values:
        return None
    numbers = [v for v in values if v is not None]
    return sum(
        -v if i + 1 < len(numbers) and numbers[i + 1] > v else v for i, v in enumerate(numbers)
    )


def _unit_key(unit: str) -> str:
    return "chapter" if unit.lower().startswith("ch") else "scene"


@dataclass(frozen=True)
class _Match:
    recipe_id: str
    pattern: str
    stems: tuple[str, ...]
    score: float
    #: What the match counts for by the clause it is in (domain/router_clauses.py).
    factor: float = 1.0
    #: For a recipe chosen as the combination of others (`Recipe.task_combines`): the best
    #: match of each recipe it combines.
    combined: tuple[_Match, ...] = ()

    def shown(self, text: str) -> str:
        """The pattern as a reason names it: a phrase as written; for a regex, the words of
        the request it matched, which say more to a writer than the regex."""
        if self.combined:
            parts = " and ".join(f"{m.recipe_id} ({m.shown(text)})" for m in self.combined)
            return f"the work of {parts} together"
        if not _is_regex(self.pattern):
            return f"pattern '{self.pattern}'"
        found = re.search(self.pattern[1:-1], text, re.IGNORECASE)
        return f"the words '{found.group(0).strip()}'" if found else f"pattern '{self.pattern}'"


_STEMMER = snowballstemmer.stemmer("english")
# British and American spellings meet before stemming; both sides of a match go through
# the same rewriting, so a rewrite only has to be consistent, not a real word.
_SPELLINGS = {
    "colour": "color",
    "grey": "gray",
    "dialogue": "dialog",
    "favour": "favor",
    # the writer's shorthand: "draft ch3", "sc. 4, ch 11", "chs 3-5"
    "ch": "chapter",
    "chs": "chapters",
    "chap": "chapter",
    "sc": "scene",
    "scn": "scene",
}
#: "ch3" and "sc4" are a unit and its number.
_UNIT_AND_NUMBER = re.compile(r"\b(chs?|chap|sc|scn)\.?(?=\d)")
_ISE = re.compile(r"(?<=[a-z]{3})is(e|es|ed|ing|ation|ations|er|ers)$")
_STOPWORDS = frozenset(
    "a an the of to and or for in on at by with my me i it its it's this that these those is "
    "are was were be been do does did can could would should will please pls you your we our "
    "us any some all every each there here what which who how whats just up out so as about "
    "into from if has have had ive i'm im then than too very".split()
)
# Words every kind of task uses: they count a little towards a match, never decide it.
_GENERIC_WORDS = (
    "scene scenes chapter chapters manuscript book novel story text draft check review make "
    "find look whole part act first new"
)


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    word = _SPELLINGS.get(word, word)
    return str(_STEMMER.stemWord(_ISE.sub(r"iz\1", word)))


@lru_cache(maxsize=4096)
def _stems(text: str) -> tuple[str, ...]:
    """The content words of `text`, stemmed: whole words only, so "mistakes" never holds
    "stakes". Cached: routing stems every recipe's patterns, the same strings each time."""
    lowered = _UNIT_AND_NUMBER.sub(r"\1 ", text.lower().replace("’", "'"))
    words = re.findall(r"[a-z0-9]+(?:'[a-z]+)?", lowered)
    return tuple(_stem(w) for w in words if w not in _STOPWORDS)


_GENERIC = frozenset(_stems(_GENERIC_WORDS))
#: What a matching regex pattern weighs: more than any one word (3.0 at most).
_REGEX_WEIGHT = 4.0


def _close(typed: str, wanted: str, shortest: int = 5) -> bool:
    """A typo: one letter added, dropped, changed, or two swapped ("wrtie", "consistancy").
    Short words are never corrected: "tells" is not a misspelt "tall"."""
    if min(len(typed), len(wanted)) < shortest or abs(len(typed) - len(wanted)) > 1:
        return False
    if len(typed) == len(wanted):
        diff = [i for i, (a, b) in enumerate(zip(typed, wanted, strict=True)) if a != b]
        if len(diff) == 2 and diff[1] == diff[0] + 1:
            return typed[diff[0]] == wanted[diff[1]] and typed[diff[1]] == wanted[diff[0]]
        return len(diff) == 1
    short, long_ = sorted((typed, wanted), key=len)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


_RAW_WORD = re.compile(r"[a-z]+")
#: A word the list does not hold, this long or longer, may be a typo of a pattern's word.
_TYPO_SHORTEST = 4


def _is_english(word: str) -> bool:
    """An ordinary English word, or one's plural or tense ("chapters", "arrives",
    "revised"): the word list (Webster's Second) holds only base forms."""
    # The word list is a tool's; the router reads it only when a word may be a typo.
    from controlroom.tools.wordlist import is_common_word

    bases = [word]
    for ending, added in (("s", ""), ("es", ""), ("ies", "y"), ("ed", ""), ("ed", "e"),
                          ("ing", ""), ("ing", "e"), ("er", ""), ("ly", "")):  # fmt: skip
        if word.endswith(ending) and len(word) > len(ending) + 2:
            bases.append(word[: -len(ending)] + added)
    return any(is_common_word(base) for base in bases)


def _respelled(text: str, surface: frozenset[str], ordered: tuple[str, ...]) -> str:
    """The request with each word that is no English word but one letter from a pattern's
    word written as that word: "chek ch 3 agianst the charcter cards" reads "check ch 3
    against the character cards". Real words are left alone ("tale" is not "tall")."""

    def fix(found: re.Match[str]) -> str:
        word = found.group(0)
        if word in surface or len(word) < _TYPO_SHORTEST or word in _STOPWORDS:
            return word
        near = [w for w in ordered if _close(word, w, _TYPO_SHORTEST)]
        if not near or _is_english(word):
            return word
        return near[0]

    return _RAW_WORD.sub(fix, text.lower())


def _spelled(words: tuple[str, ...], index: _Index) -> tuple[str, ...]:
    """The description's words with a misspelt pattern word read as that word."""
    fixed = []
    for word in words:
        if word not in index.weights and not _is_english(word):
            # "generally" stems to "general", a word, not a misspelt "generat(e)"
            word = next((v for v in index.stems_in_order if _close(word, v)), word)
        fixed.append(word)
    return tuple(fixed)


def _find(wanted: tuple[str, ...], words: tuple[str, ...]) -> int | None:
    """Where all of `wanted` start in `words`, in order, each at most two content words
    after the last ("check the consistency of" matches "check consistency"); None: not
    there."""
    for start, word in enumerate(words):
        if word != wanted[0]:
            continue
        position, found = start, True
        for stem in wanted[1:]:
            window = words[position + 1 : position + 4]
            if stem not in window:
                found = False
                break
            position = position + 1 + window.index(stem)
        if found:
            return start
    return None


@dataclass(frozen=True)
class _Pattern:
    recipe_id: str
    text: str
    #: A phrase's stems, or None for a regex.
    stems: tuple[str, ...] | None
    regex: re.Pattern[str] | None


@dataclass(frozen=True)
class _Index:
    """What routing reads from the recipes, worked out once per set of patterns: routing
    runs for every task, and the same few hundred patterns were stemmed and weighed each
    time (2 ms a task, a fifth of a main-job step's engine cost)."""

    #: A stem's weight is its specificity: a word only one recipe's patterns use says more
    #: about the request than one many use, and a generic word says little.
    weights: dict[str, float]
    stems_in_order: tuple[str, ...]
    #: Every word the patterns hold, as written (for typos of words the list lacks).
    surface: frozenset[str]
    surface_in_order: tuple[str, ...]
    patterns: tuple[_Pattern, ...]
    #: Each recipe's stems, for the closest recipes of an unroutable request.
    vocabularies: dict[str, frozenset[str]]


def _index_of(recipes: list[Recipe]) -> _Index:
    return _index(tuple((r.recipe_id, tuple(r.task_patterns)) for r in recipes))


@lru_cache(maxsize=32)
def _index(recipes: tuple[tuple[str, tuple[str, ...]], ...]) -> _Index:
    users: dict[str, set[str]] = {}
    patterns: list[_Pattern] = []
    for recipe_id, texts in recipes:
        for text in texts:
            if _is_regex(text):
                try:
                    regex = re.compile(text[1:-1], re.IGNORECASE)
                except re.error:
                    continue  # an invalid regex matches nothing, as before
                patterns.append(_Pattern(recipe_id, text, None, regex))
                continue
            stems = _stems(text)
            patterns.append(_Pattern(recipe_id, text, stems, None))
            for stem in stems:
                users.setdefault(stem, set()).add(recipe_id)
    weights = {stem: (0.5 if stem in _GENERIC else 3.0 / len(ids)) for stem, ids in users.items()}
    stems_in_order = tuple(sorted(weights))
    for pattern in patterns:
        if pattern.regex is not None:
            weights[pattern.text] = _REGEX_WEIGHT
    surface = frozenset(
        word for p in patterns if p.stems is not None for word in _RAW_WORD.findall(p.text.lower())
    )
    vocabularies: dict[str, set[str]] = {}
    for pattern in patterns:
        vocabularies.setdefault(pattern.recipe_id, set()).update(pattern.stems or ())
    return _Index(
        weights,
        stems_in_order,
        surface,
        tuple(sorted(surface)),
        tuple(patterns),
        {recipe_id: frozenset(stems) for recipe_id, stems in vocabularies.items()},
    )


def _is_regex(pattern: str) -> bool:
    return len(pattern) > 2 and pattern.startswith("/") and pattern.endswith("/")


def _match(
    pattern: _Pattern, description: str, words: tuple[str, ...]
) -> tuple[tuple[str, ...], int] | None:
    """The stems a pattern matched and where (a character of the description for a regex,
    a word for a phrase), or None."""
    if pattern.regex is not None:
        # A regex is a recipe's deliberate claim on a shape of request ("draft … then check
        # it against the canon"): it counts as one specific match, whatever words it spans.
        found = pattern.regex.search(description)
        return ((pattern.text,), found.start()) if found else None
    wanted = pattern.stems
    start = _find(wanted, words) if wanted else None
    if not wanted or start is None:
        return None
    return wanted, start


_UNIT_WORDS = ("scene", "scenes", "chapter", "chapters")


def _unit_typos_mended(text: str) -> str:
    """ "scnee 4", "chaptre 9": a unit misspelt by a letter (and no English word) is read
    as the unit, as the patterns read a misspelt word, so its number is the scope."""

    def mend(found: re.Match[str]) -> str:
        word = found.group(0).lower()
        if word in _UNIT_WORDS:
            return found.group(0)
        for unit in _UNIT_WORDS:
            if _close(word, unit) and not _is_english(word):
                return unit
        return found.group(0)

    return re.sub(r"[A-Za-z]{4,9}(?=\s*#?\s*(?:\d|[ivxlc]+\b))", mend, text, flags=re.IGNORECASE)


def initial_args_from(description: str) -> dict[str, JsonValue]:
    """Seed values the description itself states: file paths, scene or chapter numbers
    (digits, words or roman numerals; ranges become lists), the whole manuscript, quotes."""
    args: dict[str, JsonValue] = {}
    quotes = [q.strip() for q in _QUOTED.findall(description) if q.strip()]
    # A path with spaces ("Story/Chapters/Chapter 1.md") is recognised when quoted.
    spaced = [q for q in quotes if _QUOTED_PATH.search(q)]
    unquoted = _QUOTED.sub(" ", description)
    paths: list[JsonValue] = list(dict.fromkeys([*spaced, *_PATH.findall(unquoted)]))
    if paths:
        args["paths"] = paths
    covered: list[tuple[int, int]] = []
    bare = _unit_typos_mended(_PATH.sub(" ", unquoted))  # numbers in a path are no scope
    bare = _UNIT_AND_NUMBER.sub(r"\1 ", bare.lower())  # "ch3", "sc.4": a unit and its number
    for found in _RANGE.finditer(bare):
        first, last = _number(found.group(2)), _number(found.group(3))
        if first is not None and last is not None:
            joined = found.group(0).lower()
            span = [first, last] if " and " in joined else list(range(first, last + 1))
            args[f"{_unit_key(found.group(1))}_numbers"] = list(span)
            covered.append(found.span())
    for found in _SINGLE.finditer(bare):
        if any(a <= found.start() < b for a, b in covered):
            continue
        number = _number(found.group(2))
        key = f"{_unit_key(found.group(1))}_number"
        if number is not None and key not in args:
            args[key] = number
    if _WHOLE.search(bare):
        args["scope"] = "manuscript"
    quoted: list[JsonValue] = [q for q in quotes if q not in spaced]
    if quoted:
        args["quoted"] = quoted
    return args


def closest_recipes(description: str, recipes: Iterable[Recipe], limit: int = 3) -> list[str]:
    """Recipes that plausibly fit a request no pattern matched: one of their phrase patterns
    has two or more of its specific words (not generic ones such as "chapter") in the
    request, out of order or too far apart to match ("payoffs … the setups" for "setups
    and payoffs"); the weightiest first. One shared word is no fit: "a tweet announcing my
    launch date" shares "date" with the canon recipe and is nothing like it."""
    recipes = [recipe for recipe in recipes if not recipe.started_by]  # no task starts them
    index = _index_of(recipes)
    words = set(_spelled(_stems(description), index))
    wanted = {recipe.recipe_id for recipe in recipes}
    best: dict[str, float] = {}
    for pattern in index.patterns:
        if pattern.stems is None or pattern.recipe_id not in wanted:
            continue
        shared = {stem for stem in pattern.stems if stem not in _GENERIC and stem in words}
        if len(shared) >= 2:
            weight = sum(index.weights.get(stem, 0.0) for stem in shared)
            best[pattern.recipe_id] = max(best.get(pattern.recipe_id, 0.0), weight)
    ranked = sorted(best.items(), key=lambda row: (-row[1], row[0]))
    return [recipe_id for recipe_id, _ in ranked[:limit]]


#: A writer asking what the tool does, not for work: "help", "what can you do?".
_ASKS_FOR_HELP = re.compile(
    r"^\W*(?:help|\?+|what (?:can|do) (?:you|it|this|i) do|what (?:are|is) (?:the|your) "
    r"(?:recipes|options|commands)|how does (?:this|it) work|usage)\W*$",
    re.IGNORECASE,
)


def _unroutable(text: str, recipes: list[Recipe]) -> RoutingDecision:
    if _ASKS_FOR_HELP.match(text):
        return RoutingDecision(
            routable=False,
            recipe_id=None,
            reason=(
                "this asks what the recipes do rather than for work: `controlroom recipes "
                "list` names each with what it does, and a request in your own words ("
                '"check scene 2 against the cards", "draft scene 4 from the outline") '
                "is routed to one"
            ),
        )
    closest = closest_recipes(text, recipes)
    quoted = text.replace('"', "'")
    hint = f" Closest recipes: {', '.join(closest)}." if closest else ""
    # Both ways in are named: the same reason reaches the CLI and HTTP clients.
    return RoutingDecision(
        routable=False,
        recipe_id=None,
        reason=(
            "no recipe fits this request; plan it as work of its own with "
            f'`controlroom plan create "{quoted}"`, or over HTTP `POST /api/plans` with '
            f'{{"intent": "{quoted}"}} (the Chief, the planning agent, drafts the plan for '
            f"you to approve).{hint}"
        ),
    )


_IDENTIFIER = re.compile(r"^[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+$")
#: A clause that tells what not to do ("Draft scene 4. Don't contradict the cards!", "…,
#: but never touch the dialogue") is a constraint on the task, not the task: its words do
#: not route. It runs from a sentence's or clause's start to the next stop or dash.
_PROHIBITION = re.compile(
    r"(?:^|(?<=[.!?;:,—–])|\b(?:and|but|just)\b)\s*(?:please\s+|pls\s+)?"
    r"(?:don'?t|do not|never|no need to|not asking (?:you )?(?:for|to)|"
    r"without (?:touching|changing))"
    # ... up to the next stop, or to a comma that turns to what is asked ("Don't update
    # the cards, just check consistency").
    r"\b(?:(?!,\s*(?:just|only|instead|rather|but|then)\b)[^.!?;:—–])*",
    re.IGNORECASE,
)
#: The outline named as the source of the work ("draft it from the outline", "take the
#: outline and write it") says where the beats are, not that the outline is the task
#: ("swap chapters 14 and 16 in the outline" is about it):
#: its word is read as another, which no phrase pattern holds (regex patterns, which read
#: the request as written, still see it).
_OUTLINE_AS_SOURCE = re.compile(
    r"\b(?:from|per|using|off|following|according to|based on|take)\s+"
    r"(?:the\s+|my\s+|your\s+)?outline(?:'s)?\b",
    re.IGNORECASE,
)


def _without_prohibitions(text: str) -> str:
    return _PROHIBITION.sub(" ", text)


def _phrase_words(text: str) -> str:
    """The request as phrase patterns read it: the outline named as a source renamed."""
    return _OUTLINE_AS_SOURCE.sub(lambda m: m.group(0)[: -len("outline")] + "outlinesource", text)


def route(description: str, recipes: Iterable[Recipe]) -> RoutingDecision:
    """The recipe for the description: the phrase patterns' choice (`route_by_patterns`),
    unless the second reading by example requests (domain/router_examples.py) is much surer
    of another recipe, or that none fits; the reason says which read it."""
    recipes = list(recipes)
    by_patterns = route_by_patterns(description, recipes)
    text = description.strip()
    if not text or _IDENTIFIER.match(text):
        return by_patterns
    if by_patterns.routable and by_patterns.recipe_id not in router_examples.exemplified():
        # A workspace's own recipe has no example requests: nothing can be surer of it
        # than its own patterns (and the examples no recipe does may be what it does).
        return by_patterns
    model = router_examples.model_for(recipes)
    if model is None:
        return by_patterns
    reading = model.read(text)  # whole, as its examples were taught
    if reading.top == (by_patterns.recipe_id or router_examples.NO_RECIPE):
        return by_patterns  # they agree (the usual case: nothing more to work out)
    # What the writer ruled out it may not pick: a recipe whose patterns match only inside
    # a prohibition ("don't check continuity"), or whose phrases begin with the act a
    # prohibition names ("Don't draft anything yet.": the drafting recipes).
    index = _index_of(recipes)
    forbidden = set(_matches(text, index)) - set(_matches(_without_prohibitions(text), index))
    for prohibition in _PROHIBITION.finditer(text):
        forbidden |= _ruled_out(prohibition.group(0), index)
    instead = router_examples.overrules(reading, by_patterns.recipe_id, forbidden)
    if instead is None or (not by_patterns.routable and not _asks_something(text, index)):
        # "Do scene 3" names a unit and asks nothing a recipe's words say: the Chief asks
        # what is meant (a clarifying question) rather than a guess by likeness.
        return by_patterns
    nearest = model.nearest(text, instead)
    patterns_said = (
        f"the patterns alone chose '{by_patterns.recipe_id}'"
        if by_patterns.routable
        else "the patterns alone found no recipe"
    )
    if instead == router_examples.NO_RECIPE:
        unroutable = _unroutable(text, recipes)
        return unroutable.model_copy(
            update={
                "reason": f"it reads most like requests no recipe does (such as "
                f'"{nearest}"; {patterns_said}): ' + unroutable.reason
            }
        )
    return RoutingDecision(
        routable=True,
        recipe_id=instead,
        reason=(
            f"it reads most like requests recipe '{instead}' does (such as "
            f'"{nearest}"), by the example requests; {patterns_said}'
        ),
        initial_args=initial_args_from(text),
    )


#: The words that make a clause a prohibition, before the act it forbids.
_NEGATION_STEMS = frozenset(_stems("don't dont not never no need without asking you for to"))
#: Words after the act that set its bounds rather than forbid it.
_SCOPE_STEMS = frozenset(_stems("past beyond outside more longer over after"))


def _ruled_out(prohibition: str, index: _Index) -> set[str]:
    """The recipes with a phrase pattern that begins with the act a prohibition forbids:
    "don't draft anything" rules out every recipe with a phrase "draft …", "without
    touching the cards" none (no phrase begins with "touch")."""
    acts = [s for s in _spelled(_stems(prohibition), index) if s not in _NEGATION_STEMS]
    if not acts or (len(acts) > 1 and acts[1] in _SCOPE_STEMS):
        return set()  # "don't write past the end of the beat" limits the act, not forbids
    return {
        pattern.recipe_id
        for pattern in index.patterns
        if pattern.stems and pattern.stems[0] == acts[0]
    }


def _asks_something(text: str, index: _Index) -> bool:
    """Whether the request holds a word some recipe's patterns use, beyond the generic
    ones every task uses ("scene", "chapter", "draft") and numbers."""
    return any(
        stem in index.weights and stem not in _GENERIC and not stem.isdigit()
        for stem in _spelled(_stems(text), index)
    )


def route_by_patterns(description: str, recipes: Iterable[Recipe]) -> RoutingDecision:
    """The recipe whose patterns best explain the description: each recipe scores the
    specificity-weighted stems its matching patterns share with it; the highest score wins,
    then the longest pattern, then the recipe id (and the reason says which)."""
    text = description.strip()
    if not text:
        return RoutingDecision(
            routable=False, recipe_id=None, reason="empty task description; the Chief must scope it"
        )
    if _IDENTIFIER.match(text):
        # "creative_draft_scenee" is a mistyped recipe id, not a request to read word by word.
        return RoutingDecision(
            routable=False,
            recipe_id=None,
            reason=f"'{text}' looks like a recipe id, and no recipe has it; the Chief must "
            "scope it",
        )
    recipes = list(recipes)
    index = _index_of(recipes)
    weights = index.weights
    matched = _matches(_without_prohibitions(text), index)
    if not matched:  # nothing but a prohibition, say: read it whole rather than not at all
        matched = _matches(text, index)
    if not matched:
        return _unroutable(text, recipes)
    scored = {
        recipe_id: (_recipe_score(found, weights), _best(found))
        for recipe_id, found in matched.items()
    }
    scored.update(_combinations(text, recipes, matched, scored))
    ranked = sorted(
        ((score, len(best.pattern), best) for score, best in scored.values()),
        key=lambda row: (-row[0], -row[1], row[2].recipe_id),
    )
    score, length, best = ranked[0]
    chosen = next(r for r in recipes if r.recipe_id == best.recipe_id)
    if chosen.started_by:
        # Unroutable, yet a pattern matched: the work has a command of its own, which
        # the reason names (the Chief asks it back rather than asking to scope the task).
        return RoutingDecision(
            routable=False,
            recipe_id=None,
            reason=(
                f"this asks for {chosen.label or chosen.recipe_id} ({best.shown(text)}), "
                f"which no task starts: {chosen.started_by}"
            ),
            matched_pattern=best.pattern,
        )
    reason = (
        f"asked for {best.shown(text)}, which recipe '{best.recipe_id}' combines"
        if best.combined
        else f"matched {best.shown(text)} of recipe '{best.recipe_id}'"
    )
    if len(ranked) > 1:
        others = ", ".join(f"{m.recipe_id} ({m.shown(text)})" for _, _, m in ranked[1:])
        if (ranked[1][0], ranked[1][1]) == (score, length):
            reason += f"; tied with {others}, chosen by recipe id"
        else:
            reason += f"; the most specific of {len(ranked)} matches (also {others})"
    return RoutingDecision(
        routable=True,
        recipe_id=best.recipe_id,
        reason=reason,
        matched_pattern=best.pattern,
        initial_args=initial_args_from(text),
    )


def _matches(text: str, index: _Index) -> dict[str, list[_Match]]:
    """Each recipe's patterns that match `text` (a regex reads it as written), with their
    weights and the weight of the clause each starts in."""
    parts = clauses(text)
    factors = clause_weights([part for _, part in parts])
    words: list[str] = []
    word_factor: list[float] = []
    for (_, part), factor in zip(parts, factors, strict=True):
        phrased = _respelled(_phrase_words(part), index.surface, index.surface_in_order)
        stems = _spelled(_stems(phrased), index)
        words.extend(stems)
        word_factor.extend([factor] * len(stems))
    starts = [start for start, _ in parts]

    def factor_at(char: int) -> float:
        return next(
            (
                f
                for start, f in zip(reversed(starts), reversed(factors), strict=True)
                if start <= char
            ),
            factors[0] if factors else 1.0,
        )

    matched: dict[str, list[_Match]] = {}
    read = tuple(words)  # once: every pattern reads the same words
    for pattern in index.patterns:
        found = _match(pattern, text, read)
        if found is not None:
            stems, where = found
            factor = factor_at(where) if pattern.regex is not None else word_factor[where]
            if factor == 0:  # a courtesy ("many thanks") asks for nothing
                continue
            score = sum(index.weights.get(s, 1.0) for s in stems) * factor
            matched.setdefault(pattern.recipe_id, []).append(
                _Match(pattern.recipe_id, pattern.text, stems, score, factor)
            )
    return matched


def _combinations(
    text: str,
    recipes: list[Recipe],
    matched: dict[str, list[_Match]],
    scored: dict[str, tuple[float, _Match]],
) -> dict[str, tuple[float, _Match]]:
    """Recipes that combine others (`Recipe.task_combines`) and whose every part the request
    asks for: each scores its parts' scores and its own, so it wins over any part alone (a
    request for both checks is a request for the recipe that runs both). A part counts only
    where a clause asks for it: a statement of what is there ("the prose is flabby") or a
    prohibition asks for no work."""
    found: dict[str, tuple[float, _Match]] = {}
    for recipe in recipes:
        for combination in recipe.task_combines:
            if combination.when and not re.search(combination.when, text, re.IGNORECASE):
                continue
            if combination.unless and re.search(combination.unless, text, re.IGNORECASE):
                continue
            asked = [
                [m for m in matched.get(part, []) if m.factor >= HOW]
                for part in combination.recipes
            ]
            if not all(asked):
                continue
            parts = [_best(found) for found in asked]
            own, _ = scored.get(recipe.recipe_id, (0.0, None))
            score = own + sum(scored[part][0] for part in combination.recipes)
            if score > found.get(recipe.recipe_id, (0.0, None))[0]:
                pattern = " + ".join(m.pattern for m in parts)
                found[recipe.recipe_id] = (
                    score,
                    _Match(recipe.recipe_id, pattern, (), score, combined=tuple(parts)),
                )
    return found


def _best(found: list[_Match]) -> _Match:
    """A recipe's match a reason names: the weightiest, then the longest pattern."""
    return max(found, key=lambda m: (m.score, len(m.pattern)))


def _recipe_score(found: list[_Match], weights: dict[str, float]) -> float:
    """The weight of every stem the recipe's patterns matched, a stem counted as often as
    one pattern holds it: a phrase ("beat by beat") counts every word it matched, while two
    patterns sharing a word ("draft", "draft chapter") do not count it twice."""
    times: dict[str, float] = {}
    for match in found:
        for stem in set(match.stems):
            times[stem] = max(times.get(stem, 0.0), match.stems.count(stem) * match.factor)
    return sum(weights.get(stem, 1.0) * count for stem, count in times.items())
