"""`$ref` resolution, exactly per appendix C of the execution-modes seed.

Grammar: ``root(.key)*`` where any segment may carry trailing ``[N]`` indexes.
The root ``task`` addresses task metadata; any other root names a cache slot.
No JSONPath, filters, wildcards or expressions. Null anywhere is a failure that
names the broken path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controlroom.domain.errors import RefResolutionError

_SEGMENT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_\-]*)(?P<indexes>(\[\d+\])*)$")
_INDEX = re.compile(r"\[(\d+)\]")

TASK_ROOT = "task"
TASK_FIELDS = frozenset({"description", "args", "initial_args", "session_plan_task_id", "run_id"})


@dataclass(frozen=True)
class Step:
    """One navigation step: a key in an object, or an index in an array."""

    key: str | None = None
    index: int | None = None


@dataclass(frozen=True)
class RefPath:
    text: str
    root: str
    steps: tuple[Step, ...]

    @property
    def is_task(self) -> bool:
        return self.root == TASK_ROOT

    def task_arg(self) -> str | None:
        """For ``task.args.X...`` (or ``task.initial_args.X``) the arg name X, else None."""
        if not self.is_task or len(self.steps) < 2:
            return None
        first, second = self.steps[0], self.steps[1]
        if first.key in ("args", "initial_args") and second.key is not None:
            return second.key
        return None


def parse_ref(text: str) -> RefPath:
    """Parse a `$ref` path; raises RefResolutionError naming the malformed part."""
    if not isinstance(text, str) or not text:
        raise RefResolutionError(str(text), str(text), "empty path")
    steps: list[Step] = []
    root = ""
    for position, segment in enumerate(text.split(".")):
        match = _SEGMENT.match(segment)
        if match is None:
            raise RefResolutionError(text, segment or text, "malformed segment")
        if position == 0:
            root = match["name"]
        else:
            steps.append(Step(key=match["name"]))
        steps.extend(Step(index=int(i)) for i in _INDEX.findall(match["indexes"]))
    return RefPath(text=text, root=root, steps=tuple(steps))


def task_context(
    description: str,
    args: Mapping[str, Any],
    session_plan_task_id: int | None,
    run_id: str | None = None,
) -> dict[str, Any]:
    """The value the `task` root navigates; `args` and `initial_args` are the same map.
    `run_id` names a file one run writes (`control-room-reports/x/{{task.run_id}}.md`), so
    a report is kept per run rather than overwritten by the next."""
    return {
        "description": description,
        "args": dict(args),
        "initial_args": dict(args),
        "session_plan_task_id": session_plan_task_id,
        "run_id": run_id,
    }


def resolve_ref(text: str, task: Mapping[str, Any], slots: Mapping[str, Any]) -> Any:
    """Resolve a `$ref` against task metadata and the slot values written so far."""
    ref = parse_ref(text)
    if ref.is_task:
        current: Any = task
    elif ref.root in slots:
        current = slots[ref.root]
    else:
        raise RefResolutionError(text, ref.root, f"no slot '{ref.root}' has been written")
    walked = ref.root
    if current is None:
        raise RefResolutionError(text, walked, "is null")
    for step in ref.steps:
        current, walked = _step_into(text, walked, current, step)
        if current is None:
            raise RefResolutionError(text, walked, "is null")
    return current


def _step_into(text: str, walked: str, current: Any, step: Step) -> tuple[Any, str]:
    if step.key is not None:
        here = f"{walked}.{step.key}"
        if not isinstance(current, Mapping):
            raise RefResolutionError(text, here, f"'{walked}' is {_kind(current)}, not an object")
        if step.key not in current:
            raise RefResolutionError(text, here, "missing key")
        return current[step.key], here
    assert step.index is not None
    here = f"{walked}[{step.index}]"
    if not isinstance(current, list | tuple):
        raise RefResolutionError(text, here, f"'{walked}' is {_kind(current)}, not an array")
    if step.index >= len(current):
        raise RefResolutionError(
            text, here, f"index {step.index} out of range (length {len(current)})"
        )
    return current[step.index], here


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__
