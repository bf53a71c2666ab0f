"""$ref resolution per appendix C: every example, and every way it can fail."""

from __future__ import annotations

from typing import Any

import pytest

from controlroom.domain.errors import RefResolutionError
from controlroom.domain.refs import parse_ref, resolve_ref, task_context

TASK = task_context(
    "Draft scene 21",
    {"scene_path": "Story/Scenes/SCN-the-arrival.md", "canon_paths": ["a.md"]},
    1,
)
SLOTS: dict[str, Any] = {
    "discovery": {"matches": [{"path": "Story/SCN-outline.md"}], "empty": None},
    "outline_beat": {"scenes": [{"title": "One"}, {"title": "Two"}, {"title": "Three"}]},
    "canon_context": {"conflicts": ["Kael's eyes"]},
    "draft": "plain text",
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("task.description", "Draft scene 21"),
        ("task.args.scene_path", "Story/Scenes/SCN-the-arrival.md"),
        ("task.initial_args.canon_paths[0]", "a.md"),
        ("task.session_plan_task_id", 1),
        ("discovery.matches[0].path", "Story/SCN-outline.md"),
        ("outline_beat.scenes[2].title", "Three"),
        ("canon_context.conflicts", ["Kael's eyes"]),
        ("draft", "plain text"),
    ],
)
def test_resolves_each_appendix_c_example(path: str, expected: Any) -> None:
    assert resolve_ref(path, TASK, SLOTS) == expected


@pytest.mark.parametrize(
    ("path", "failed_at", "reason"),
    [
        ("discovery.nope", "discovery.nope", "missing key"),
        ("discovery.matches[3].path", "discovery.matches[3]", "out of range"),
        ("discovery.empty", "discovery.empty", "is null"),
        ("discovery.empty.deeper", "discovery.empty", "is null"),
        ("draft.title", "draft.title", "not an object"),
        ("canon_context[0]", "canon_context[0]", "not an array"),
        ("unwritten.value", "unwritten", "no slot 'unwritten'"),
        ("task.args.missing", "task.args.missing", "missing key"),
    ],
)
def test_a_broken_path_fails_naming_where_it_broke(path: str, failed_at: str, reason: str) -> None:
    with pytest.raises(RefResolutionError) as caught:
        resolve_ref(path, TASK, SLOTS)
    assert caught.value.path == path
    assert caught.value.failed_at == failed_at
    assert reason in caught.value.reason
    assert path in str(caught.value)


@pytest.mark.parametrize("path", ["", "a..b", "a.b[x]", "a.$b", "[0]", "a.b[0", "a b"])
def test_malformed_paths_are_refused_not_guessed(path: str) -> None:
    with pytest.raises(RefResolutionError):
        parse_ref(path)


def test_no_jsonpath_filters_or_wildcards() -> None:
    for path in ("discovery.matches[*].path", "discovery.matches[?(@.path)]", "$.discovery"):
        with pytest.raises(RefResolutionError):
            resolve_ref(path, TASK, SLOTS)


def test_task_arg_names_what_a_recipe_requires() -> None:
    assert parse_ref("task.args.scene_path").task_arg() == "scene_path"
    assert parse_ref("task.description").task_arg() is None
    assert parse_ref("discovery.args.x").task_arg() is None
