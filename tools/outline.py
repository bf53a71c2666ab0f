"""The outline: one section per scene or chapter, with its beats and its cast."""

from __future__ import annotations

import re
from typing import Any

from controlroom.tools.layout import number_in
from controlroom.tools.text import normalize_newlines

_HEADING = re.compile(r"^(#{1,4})\s+(.*?)\s*#*\s*$")
_UNIT_HEADING = re.compile(
    r"^(scene|chapter|ch\.?)\s+#?([0-9]+|[ivxlc]+\b|[a-z]+(?:-[a-z]+)?)\s*[:.\-–—]?\s*(.*)$",
    re.IGNORECASE,
)
# "Part Three — The Return (chapters 11–13)", "Act II", "Book One": a grouping of units, not
# a unit; numbering it would make "Draft chapter 13" draft the part heading.
_GROUP_HEADING = re.compile(r"^(?:part|act|book|volume|vol\.)\s+\S+", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_CHARACTERS = re.compile(
    r"^\s*(?:[-*+]\s*)?\*{0,2}(?:characters|cast|pov)\*{0,2}\s*:\s*\*{0,2}(.*)$", re.IGNORECASE
)
_WORD_NUMBERS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50}


def word_number(text: str) -> int | None:
    """`Eleven` → 11, `twenty-one` → 21; None for anything else."""
    words = re.split(r"[- ]", text.lower().strip())
    if len(words) == 1:
        return _WORD_NUMBERS.get(words[0], _TENS.get(words[0]))
    if len(words) == 2 and words[0] in _TENS and 0 < _WORD_NUMBERS.get(words[1], 0) < 10:
        return _TENS[words[0]] + _WORD_NUMBERS[words[1]]
    return None


def _unit_number(kind: str, label: str) -> int | None:
    return number_in(f"{kind} {label}") if number_in(f"{kind} {label}") else word_number(label)


def parse_outline(text: str) -> list[dict[str, Any]]:
    """Sections under `##` (or `###`/`####`) headings; the `#` title is not a section unless
    it names a scene or chapter itself. Part, act and book headings group sections and are
    never sections themselves (unless the outline has no other headings)."""
    scenes = _sections(text, skip_groups=True)
    return scenes if scenes else _sections(text, skip_groups=False)


def _sections(text: str, skip_groups: bool) -> list[dict[str, Any]]:
    scenes: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in normalize_newlines(text).splitlines():
        heading = _HEADING.match(line)
        if heading:
            level, body = heading.group(1), heading.group(2).strip()
            unit = _UNIT_HEADING.match(body)
            number = _unit_number(unit.group(1), unit.group(2)) if unit else None
            if unit and number is None:
                unit = None  # "Chapter and verse": a title, not a numbered unit
            if skip_groups and not unit and _GROUP_HEADING.match(body):
                current = None
                continue
            if unit or len(level) >= 2:
                current = {
                    "index": len(scenes),
                    "number": number if number is not None else len(scenes) + 1,
                    "title": (unit.group(3) if unit else body).strip(),
                    "beats": [],
                    "characters": [],
                }
                scenes.append(current)
                continue
        if current is None:
            continue
        cast = _CHARACTERS.match(line)
        if cast:
            current["characters"] = [c.strip(" *") for c in cast.group(1).split(",") if c.strip()]
            continue
        bullet = _BULLET.match(line)
        if bullet:
            current["beats"].append(bullet.group(1).strip())
    return scenes
