"""Definition of Done: pure evaluation of a recipe's checks against a run's slots.

Whether a file exists is a question about the world, so the caller answers it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from controlroom.domain.errors import RefResolutionError
from controlroom.domain.recipe import (
    MENTION_FIELD,
    DodCheck,
    FileExists,
    SlotFieldEmpty,
    SlotFieldEquals,
    SlotMentionsEach,
    SlotNotNull,
)
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
    if isinstance(check, SlotFieldEmpty | SlotMentionsEach):
        return _evaluate_list(index, check, spec, slots, task)
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


def _evaluate_list(
    index: int,
    check: SlotFieldEmpty | SlotMentionsEach,
    spec: dict[str, Any],
    slots: Mapping[str, Any],
    task: Mapping[str, Any],
) -> DodResult:
    where = (
        check.items.ref if isinstance(check, SlotMentionsEach) else f"{check.slot}.{check.field}"
    )
    try:
        items = failing_items(check, slots, task)
    except RefResolutionError as exc:
        return DodResult(
            index=index,
            check=spec,
            passed=False,
            detail=f"{where}: {exc.reason} at '{exc.failed_at}'",
            evidence=_evidence(slots.get(check.slot)),
        )
    if isinstance(check, SlotFieldEmpty):
        verb = "is empty" if not items else f"holds {len(items)} item(s)"
        detail = f"{where} {verb}"
        name = check.field.rsplit(".", 1)[-1]
    elif not items:
        detail = f"slot '{check.slot}' mentions every item of {where}"
        name = "not_mentioned"
    else:
        detail = f"slot '{check.slot}' does not mention {len(items)} item(s) of {where}"
        name = "not_mentioned"
    return DodResult(
        index=index,
        check=spec,
        passed=not items,
        detail=detail,
        evidence=_listed(name, items) if items else None,
    )


def _listed(name: str, items: list[Any], limit: int = 4000) -> dict[str, Any]:
    """The items behind a failed list check, as `{name: [...], "count": n}`: as many whole
    items as fit in `limit` characters of JSON (`left_out` says how many did not)."""
    kept: list[Any] = []
    size = 0
    for item in items:
        size += len(json.dumps(item, ensure_ascii=False, default=str)) + 2
        if kept and size > limit:
            break
        kept.append(_evidence(item, limit))
    listed: dict[str, Any] = {name: kept, "count": len(items)}
    if len(kept) < len(items):
        listed["left_out"] = len(items) - len(kept)
    return listed


def failing_items(
    check: SlotFieldEmpty | SlotMentionsEach, slots: Mapping[str, Any], task: Mapping[str, Any]
) -> list[Any]:
    """What makes a list check fail: the items a `slot_field_empty` field holds, or the
    items a `slot_mentions_each` slot does not mention (empty when the check holds).
    Raises RefResolutionError when the field or the list is not there (or not a list)."""
    if isinstance(check, SlotFieldEmpty):
        path = f"{check.slot}.{check.field}"
        value = resolve_ref(path, task, slots)
        if value is None or value in ([], {}, ""):
            return []
        return list(value) if isinstance(value, list) else [value]
    items = resolve_ref(check.items.ref, task, slots)
    if not isinstance(items, list):
        raise RefResolutionError(check.items.ref, check.items.ref, "is not a list")
    if check.slot not in slots:
        raise RefResolutionError(check.slot, check.slot, "is not set")
    value = slots[check.slot]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return [item for item in items if not _mentioned(item, check.mention, text)]


def _mentioned(item: Any, templates: list[str], text: str) -> bool:
    """Whether `text` holds one of the templates filled with the item's fields; a template
    naming a field the item lacks is not filled (so an item with none fails the check)."""
    if not isinstance(item, Mapping):
        return False
    for template in templates:
        names = re.findall(MENTION_FIELD, template)
        if any(name not in item or item[name] is None for name in names):
            continue
        filled = re.sub(MENTION_FIELD, lambda m: str(item[m.group(1)]), template)
        if filled in text:
            return True
    return False


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1`, as it would not be in the document."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _evidence(value: Any, limit: int = 4000) -> Any:
    """The slot value behind a failed check, kept small enough for an issue."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= limit:
        return value
    return text[:limit] + "…"
