"""JSON from text nobody vouches for (a model's reply, a slot it wrote), read within bounds.

Python's parser recurses once per nested container: a reply nested ~1,000 levels deep
raises `RecursionError`, which no `except ValueError` catches, and a value nested even 250
levels deep cannot be stored in an event and read back (see `api/limits.py`). So the depth
is measured before anything is parsed, by a scan that skips string literals (a bracket
inside a string does not nest) and stops as soon as the value closes or passes the limit.
`NaN`, `Infinity` and numbers too large for a float are refused: they are not JSON, and an
event could not hold them.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: Containers (objects and arrays) nested in one model-written JSON value; the same bound
#: the API puts on a caller's arguments, far below what the event store can read back.
MAX_DEPTH = 32

#: A whole string literal (escapes included), or one bracket.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_OPEN = frozenset("[{")


class TooDeepError(ValueError):
    """The JSON value nests containers deeper than the limit: refused before parsing."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"the JSON is nested deeper than {limit} levels")


def _not_json(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON number")


def _finite(token: str) -> float:
    value = float(token)
    if math.isinf(value):
        raise ValueError(f"the number {token[:40]} is too large")
    return value


_DECODER = json.JSONDecoder(parse_constant=_not_json, parse_float=_finite)


def too_deep(text: str, start: int = 0, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON value at `start` nests containers deeper than `limit`.

    Reads only as far as the value's end, one level past the limit, or a string that never
    ends (where the parser would stop too); a scalar at `start` is never too deep. Invalid
    JSON may be judged too deep where the parser would have refused it anyway."""
    depth = 0
    read_to = start
    for match in _TOKEN.finditer(text, start):
        if text.find('"', read_to, match.start()) >= 0:
            return False  # an unterminated string: the parser fails there, no deeper
        read_to = match.end()
        token = match.group()
        if token[0] == '"':
            if depth == 0:
                return False
            continue
        if token in _OPEN:
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
            if depth <= 0:
                return False
    return False


def decode_at(text: str, start: int, limit: int = MAX_DEPTH) -> tuple[Any, int]:
    """The JSON value beginning at `start` and the index just past it (like
    `JSONDecoder.raw_decode`), refused with `TooDeepError` before parsing when too deep.
    Raises `ValueError` (a `json.JSONDecodeError` with the position) when it is not JSON."""
    if too_deep(text, start, limit):
        raise TooDeepError(limit)
    try:
        value, end = _DECODER.raw_decode(text, start)
    except RecursionError:  # never expected after the scan; never let it escape either
        raise TooDeepError(limit) from None
    return value, end


def loads(text: str, limit: int = MAX_DEPTH) -> Any:
    """`json.loads` for untrusted text: the whole text one JSON value, within `limit`."""
    start = len(text) - len(text.lstrip())
    value, end = decode_at(text, start, limit)
    if text[end:].strip():
        raise json.JSONDecodeError("Extra data", text, end)
    return value
