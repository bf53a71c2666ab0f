"""task_router per appendix E: deterministic keyword and pattern matching, no model.

A pattern is a case-insensitive substring, or a regex when written `/like this/`.
The longest match wins; ties go to the recipe id first in sort order, and say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import JsonValue

from controlroom.domain.recipe import Recipe
from controlroom.domain.run_events import RoutingDecision

_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:md|markdown|txt))\b")
_SCENE_NUMBER = re.compile(r"\bscene\s+#?(\d+)\b", re.IGNORECASE)
_QUOTED = re.compile(r"[\"“]([^\"”]+)[\"”]")


@dataclass(frozen=True)
class _Match:
    recipe_id: str
    pattern: str
    length: int


def _match(pattern: str, description: str) -> int:
    """Length of the matched text, or 0 when the pattern does not match."""
    if len(pattern) > 2 and pattern.startswith("/") and pattern.endswith("/"):
        try:
            found = re.search(pattern[1:-1], description, re.IGNORECASE)
        except re.error:
            return 0
        return len(found.group(0)) if found else 0
    return len(pattern) if pattern.lower() in description.lower() else 0


def initial_args_from(description: str) -> dict[str, JsonValue]:
    """Seed values the description itself states: file paths, a scene number, quotes."""
    args: dict[str, JsonValue] = {}
    paths: list[JsonValue] = list(dict.fromkeys(_PATH.findall(description)))
    if paths:
        args["paths"] = paths
    scene = _SCENE_NUMBER.search(description)
    if scene:
        args["scene_number"] = int(scene.group(1))
    quoted: list[JsonValue] = [q.strip() for q in _QUOTED.findall(description) if q.strip()]
    if quoted:
        args["quoted"] = quoted
    return args


def route(description: str, recipes: Iterable[Recipe]) -> RoutingDecision:
    text = description.strip()
    if not text:
        return RoutingDecision(
            routable=False, recipe_id=None, reason="empty task description; the Chief must scope it"
        )
    matches = [
        _Match(recipe.recipe_id, pattern, length)
        for recipe in recipes
        for pattern in recipe.task_patterns
        if (length := _match(pattern, text))
    ]
    if not matches:
        return RoutingDecision(
            routable=False,
            recipe_id=None,
            reason="no recipe's task_patterns match; the Chief must scope this task",
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
