"""Limits at the edge: what any caller (HTTP or CLI) may hand in, checked before anything is
recorded. Each refusal names the field, so the HTTP layer answers 400 with it and the CLI
prints it and exits 64.

Request bodies share these limits through the field types of api/fields.py (`Text`, `Note`,
`Id`, `TaskNumber`) and the constants, so no body spells a number of its own. This module
imports no pydantic: the CLI checks its arguments with it before it loads anything heavy.

Why these numbers: an event must always read back. The JSON parser that reads stored events
refuses nesting beyond 200 levels and the serializer beyond about 250, so a value nested
deeper than that could be stored by one release and never read again (a poison event).
`MAX_DEPTH` keeps far below both; the other limits keep one request from filling the log.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from controlroom.domain.errors import BadInputError

#: Containers (objects and arrays) nested inside one argument value.
MAX_DEPTH = 32
#: Characters in one string value (a task description, an argument, a key).
MAX_TEXT = 100_000
#: Characters in an id: recipe, run, session, slot, issue.
MAX_ID = 200
#: Characters in an argument's name.
MAX_KEY = 200
#: Values (scalars and containers) in one request's arguments, all levels together.
MAX_VALUES = 10_000
#: Numbers must fit a signed 64-bit column and JavaScript's exact integer range both.
MAX_INT = 2**53 - 1
#: A global position or version: a signed 64-bit integer, ASCII digits only.
MAX_POSITION = 2**63 - 1
#: Items in one list a request body carries (a plan's task order).
MAX_ITEMS = 10_000
#: A plan's task number.
MAX_TASK = 1_000_000
#: Roles asked in one conference round.
MAX_ROLES = 20
#: Tools a conference round may be allowed.
MAX_TOOLS = 50
_POSITION = re.compile(r"[0-9]{1,19}")
#: Runs in one page of `GET /api/runs?limit=`.
MAX_PAGE = 1000


class LimitError(BadInputError):
    """Input outside the limits; `field` names where (`args.deep`, `after`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


def check_text(value: str, field: str, limit: int = MAX_TEXT) -> str:
    if len(value) > limit:
        raise LimitError(field, f"longer than {limit} characters ({len(value)})")
    if "\x00" in value:
        raise LimitError(field, "contains a NUL character")
    return value


def check_id(value: str, field: str) -> str:
    return check_text(value, field, MAX_ID)


def check_json(value: Any, field: str) -> Any:
    """A JSON value within depth, size, length and integer limits (walked without recursion,
    so a hostile value cannot exhaust the stack here either)."""
    count = 0
    stack: list[tuple[Any, str, int]] = [(value, field, 0)]
    while stack:
        item, where, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise LimitError(field, f"more than {MAX_VALUES} values")
        if isinstance(item, dict):
            if depth >= MAX_DEPTH:
                raise LimitError(where, f"nested deeper than {MAX_DEPTH} levels")
            for key, child in item.items():
                if not isinstance(key, str):
                    raise LimitError(where, "object keys must be strings")
                check_text(key, f"{where}.{key[:40]}", MAX_KEY)
                stack.append((child, f"{where}.{key}", depth + 1))
        elif isinstance(item, list | tuple):
            if depth >= MAX_DEPTH:
                raise LimitError(where, f"nested deeper than {MAX_DEPTH} levels")
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))
        elif isinstance(item, str):
            check_text(item, where)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not -MAX_INT <= item <= MAX_INT:
                raise LimitError(where, f"integer outside ±{MAX_INT}")
        elif isinstance(item, float):
            # A JSON parser may turn an integer too large for 64 bits into a float.
            if not -MAX_INT <= item <= MAX_INT:  # NaN fails this too
                raise LimitError(where, f"number outside ±{MAX_INT} or not finite")
        else:
            raise LimitError(where, f"not a JSON value ({type(item).__name__})")
    return value


def check_args(args: Mapping[str, Any], field: str = "args") -> dict[str, Any]:
    checked = dict(args)
    check_json(checked, field)
    return checked


def parse_position(raw: str, field: str) -> int:
    """A global position or version from text: ASCII digits only (`isdigit` also accepts
    '²' and Arabic-Indic digits), at most a signed 64-bit integer."""
    text = raw.strip()
    if not _POSITION.fullmatch(text) or int(text) > MAX_POSITION:
        shown = raw if len(raw) <= 40 else raw[:40] + "…"
        raise LimitError(field, f"'{shown}' is not a position (0 to {MAX_POSITION})")
    return int(text)


def parse_page_size(raw: str, field: str) -> int:
    """A page size: ASCII digits, 1 to `MAX_PAGE`."""
    text = raw.strip()
    if not re.fullmatch(r"[0-9]{1,7}", text) or not 1 <= int(text) <= MAX_PAGE:
        shown = raw if len(raw) <= 40 else raw[:40] + "…"
        raise LimitError(field, f"'{shown}' is not a page size (1 to {MAX_PAGE})")
    return int(text)
