"""Definition of Done checks, evaluated purely from slots and a file probe."""

from __future__ import annotations

from typing import Any

from controlroom.domain.dod import evaluate_dod
from controlroom.domain.recipe import Recipe

RECIPE = Recipe.model_validate(
    {
        "recipe_id": "r",
        "dod": [
            {"check": "slot_not_null", "slot": "draft"},
            {"check": "slot_field_equals", "slot": "report", "field": "pass", "expected": True},
            {"check": "file_exists", "path": "Story/outline.md"},
            {"check": "file_exists", "path": {"$ref": "found.path"}},
        ],
    }
)


def check(slots: dict[str, Any], files: set[str]) -> list[tuple[bool, str]]:
    results = evaluate_dod(RECIPE.dod, slots, {}, lambda p: p in files)
    return [(r.passed, r.detail) for r in results]


def test_all_checks_pass_when_the_work_is_done() -> None:
    slots = {"draft": "text", "report": {"pass": True}, "found": {"path": "a.md"}}
    assert all(ok for ok, _ in check(slots, {"Story/outline.md", "a.md"}))


def test_each_failure_says_what_was_expected_and_found() -> None:
    slots = {"draft": "", "report": {"pass": False}, "found": {"path": "b.md"}}
    results = check(slots, set())
    assert results == [
        (False, "slot 'draft' is null or empty"),
        (False, "report.pass expected true, got false"),
        (False, "file 'Story/outline.md' does not exist"),
        (False, "file 'b.md' does not exist"),
    ]


def test_true_is_not_one_and_a_missing_field_fails_with_its_path() -> None:
    assert (
        check({"draft": "x", "report": {"pass": 1}, "found": {"path": "a"}}, {"a"})[1][0] is False
    )
    detail = check({"draft": "x", "report": {}, "found": {"path": "a"}}, {"a"})[1][1]
    assert detail == "report.pass: missing key at 'report.pass'"


def test_a_failed_field_check_carries_the_slot_as_evidence() -> None:
    slots = {"draft": "x", "report": {"pass": False, "conflicts": ["eyes"]}, "found": {"path": "a"}}
    results = evaluate_dod(RECIPE.dod, slots, {}, lambda p: True)
    assert results[1].evidence == {"pass": False, "conflicts": ["eyes"]}
