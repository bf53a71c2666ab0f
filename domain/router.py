"""task_router per appendix E: deterministic keyword and pattern matching, no model.

A pattern is a case-insensitive substring, or a regex when written `/like this/`.
The longest match wins; ties go to the recipe id first in sort order, and say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from pydantic import JsonValue

from controlroom.domain.recipe import Recipe
from controlroom.domain.run_events import RoutingDecision

_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:md|markdown|txt))\b")
_QUOTED_PATH = re.compile(r"\.(?:md|markdown|txt)$", re.IGNORECASE)
_QUOTED = re.compile(r"[\"“]([^\"”]+)[\"”]")
_UNIT = r"(scene|chapter|ch\.?|scn)"
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
    length: int


_STEM = re.compile(r"(ations?|ing|ion|ions|ed|es|s|e)$")


@lru_cache(maxsize=4096)
def _stems(text: str) -> tuple[str, ...]:
    """Cached: routing a task stems its description and every recipe's patterns, the same
    few hundred strings each time."""
    return tuple(_STEM.sub("", w) or w for w in re.findall(r"[a-z]+", text.lower()))


def _match(pattern: str, description: str) -> int:
    """Length of the matched text, or 0 when the pattern does not match.

    A plain pattern matches as a substring, or failing that when all its words appear in
    order with at most two words between ("check the consistency of" matches
    "check consistency"); words match by stem ("validating" matches "validate")."""
    if len(pattern) > 2 and pattern.startswith("/") and pattern.endswith("/"):
        try:
            found = re.search(pattern[1:-1], description, re.IGNORECASE)
        except re.error:
            return 0
        return len(found.group(0)) if found else 0
    if pattern.lower() in description.lower():
        return len(pattern)
    wanted, words = _stems(pattern), _stems(description)
    if not wanted:
        return 0
    position = -1
    for stem in wanted:
        window = words[position + 1 : position + 4] if position >= 0 else words
        if stem not in window:
            return 0
        position = position + 1 + window.index(stem) if position >= 0 else words.index(stem)
    return len(pattern) - 1  # a loose match loses a tie to an exact one


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
    bare = _PATH.sub(" ", unquoted)  # numbers inside a path are not a scope
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


_GENERIC = frozenset(
    _stems(
        "the a of to and my for in on is are it this that what does do scene scenes chapter "
        "chapters manuscript book check from with all"
    )
)


def closest_recipes(description: str, recipes: Iterable[Recipe], limit: int = 3) -> list[str]:
    """Recipes whose patterns and label share the most word stems with the description."""
    words = set(_stems(description)) - _GENERIC
    scored = []
    for recipe in recipes:
        vocabulary = set(_stems(" ".join([*recipe.task_patterns, recipe.label, recipe.recipe_id])))
        shared = len(words & vocabulary)
        if shared:
            scored.append((-shared, recipe.recipe_id))
    return [recipe_id for _, recipe_id in sorted(scored)[:limit]]


def route(description: str, recipes: Iterable[Recipe]) -> RoutingDecision:
    text = description.strip()
    if not text:
        return RoutingDecision(
            routable=False, recipe_id=None, reason="empty task description; the Chief must scope it"
        )
    recipes = list(recipes)
    matches = [
        _Match(recipe.recipe_id, pattern, length)
        for recipe in recipes
        for pattern in recipe.task_patterns
        if (length := _match(pattern, text))
    ]
    if not matches:
        recipes = list(recipes)
        closest = closest_recipes(text, recipes)
        hint = f"; closest recipes: {', '.join(closest)}" if closest else ""
        return RoutingDecision(
            routable=False,
            recipe_id=None,
            reason=f"no recipe's task_patterns match{hint}; the Chief must scope this task",
        )
    best_per_recipe: dict[str, _Match] = {}
    for m in matches:
        held = best_per_recipe.get(m.recipe_id)
        if held is None or m.length > held.length:
            best_per_recipe[m.recipe_id] = m
    ranked = sorted(best_per_recipe.values(), key=lambda m: (-m.length, m.recipe_id))
    best = ranked[0]
    reason = f"matched pattern '{best.pattern}' of recipe '{best.recipe_id}'"
    if len(ranked) > 1:
        others = ", ".join(f"{m.recipe_id} ('{m.pattern}')" for m in ranked[1:])
        tie = len(ranked) > 1 and ranked[1].length == best.length
        reason += (
            f"; tied on length with {others}, chosen by recipe id"
            if tie
            else f"; longest of {len(ranked)} matches (also {others})"
        )
    return RoutingDecision(
        routable=True,
        recipe_id=best.recipe_id,
        reason=reason,
        matched_pattern=best.pattern,
        initial_args=initial_args_from(text),
    )
