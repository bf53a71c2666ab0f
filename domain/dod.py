"""Definition of Done: pure evaluation of a recipe's checks against a run's slots.

Whether a file exists is a question about the world, so the caller answers it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from controlroom.domain.errors import RefResolutionError
from controlroom.domain.recipe import DodCheck, FileExists, SlotFieldEquals, SlotNotNull
from controlroom.domain.refs import resolve_ref
from controlroom.domain.run_events import DodResult

FileExistsProbe = Callable[[str], bool]


def evaluate_dod(
    checks: list[DodCheck],
    slots: Mapping[str, Any],
    task: Mapping[str, Any],
    file_exists: FileExistsProbe,
) -> list[DodResult]:
    return [_evaluate(i, check, slots, task, file_exists) for i, check in enumerate(checks)]


def _evaluate(
    index: int,
    check: DodCheck,
    slots: Mapping[str, Any],
    task: Mapping[str, Any],
    file_exists: FileExistsProbe,
) -> DodResult:
    spec = check.model_dump(mode="json", by_alias=True)
    if isinstance(check, SlotNotNull):
        value = slots.get(check.slot)
        ok = value is not None and value != ""
        detail = f"slot '{check.slot}' is {'set' if ok else 'null or empty'}"
        return DodResult(index=index, check=spec, passed=ok, detail=detail)
    if isinstance(check, SlotFieldEquals):
        path = f"{check.slot}.{check.field}"
        try:
            actual = resolve_ref(path, task, slots)
        except RefResolutionError as exc:
            return DodResult(
                index=index,
                check=spec,
                passed=False,
                detail=f"{path}: {exc.reason} at '{exc.failed_at}'",
                evidence=_evidence(slots.get(check.slot)),
            )
        ok = _json_equal(actual, check.expected)
        detail = (
            f"{path} == {json.dumps(check.expected)}"
            if ok
            else f"{path} expected {json.dumps(check.expected)}, got {json.dumps(actual)}"
        )
        return DodResult(
            index=index,
            check=spec,
            passed=ok,
            detail=detail,
            evidence=None if ok else _evidence(slots.get(check.slot)),
        )
    assert isinstance(check, FileExists)
    if isinstance(check.path, str):
        path_text = check.path
    else:
        try:
            path_text = str(resolve_ref(check.path.ref, task, slots))
        except RefResolutionError as exc:
            return DodResult(index=index, check=spec, passed=False, detail=str(exc))
    ok = file_exists(path_text)
    return DodResult(
        index=index,
        check=spec,
        passed=ok,
        detail=f"file '{path_text}' {'exists' if ok else 'does not exist'}",
    )


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1`, as it would not be in the document."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _evidence(value: Any, limit: int = 4000) -> Any:
    """The slot value behind a failed check, kept small enough for an issue."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= limit:
        return value
    return text[:limit] + "…"
