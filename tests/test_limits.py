"""The edge limits as rules: each refusal names the field where the value broke it."""

from __future__ import annotations

import json

import pytest

from controlroom.api.limits import (
    MAX_DEPTH,
    MAX_POSITION,
    LimitError,
    check_args,
    parse_position,
)


def nested(depth: int) -> object:
    return json.loads("[" * depth + "]" * depth)


def test_nesting_up_to_the_limit_is_accepted_and_one_deeper_is_refused_by_path() -> None:
    check_args({"ok": nested(MAX_DEPTH - 1)})
    with pytest.raises(LimitError) as refused:
        check_args({"deep": nested(MAX_DEPTH + 1)})
    assert refused.value.field.startswith("args.deep[0]")


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"s": "a\x00b"}, "args.s"),
        ({"k\x00": 1}, "args.k\x00"),
        ({"n": 2**53}, "args.n"),
        ({"x": float("nan")}, "args.x"),
        ({"x": 1e300}, "args.x"),
        ({"list": [0] * 10_001}, "args"),
        ({"t": "x" * 100_001}, "args.t"),
    ],
)
def test_values_outside_the_limits_are_refused_naming_the_field(
    args: dict[str, object], field: str
) -> None:
    with pytest.raises(LimitError) as refused:
        check_args(args)
    assert refused.value.field == field


@pytest.mark.parametrize("raw", ["0", "17", " 42 ", str(MAX_POSITION)])
def test_positions_in_ascii_digits_within_64_bits_are_read(raw: str) -> None:
    assert parse_position(raw, "after") == int(raw)


@pytest.mark.parametrize(
    "raw", ["", "-1", "+1", "1.0", "١٢", "²", "１２", str(MAX_POSITION + 1), "9" * 4300]
)
def test_anything_else_is_not_a_position(raw: str) -> None:
    with pytest.raises(LimitError) as refused:
        parse_position(raw, "after")
    assert refused.value.field == "after"
