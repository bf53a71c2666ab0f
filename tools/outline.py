"""The outline: one section per scene or chapter, with its beats and its cast."""

from __future__ import annotations

import re
from typing import Any

from controlroom.tools.layout import number_in
from controlroom.tools.text import normalize_newlines

_SECTION = re.compile(
    r"^#{1,4}\s+(?:(scene|chapter|ch\.?|part)\s+([0-9]+|[ivxlc]+)\b\s*[:.\-–—]?\s*)?(.*?)\s*#*\s*$",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_CHARACTERS = re.compile(
    r"^\s*(?:[-*+]\s*)?\*{0,2}(?:characters|cast|pov)\*{0,2}\s*:\s*\*{0,2}(.*)$", re.IGNORECASE
)


def parse_outline(text: str) -> list[dict[str, Any]]:
    """Sections under `##` (or `###`/`####`) headings; the `#` title is not a section unless
    it names a scene or chapter itself."""
    scenes: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in normalize_newlines(text).splitlines():
        heading = _SECTION.match(line)
        if heading and (line.startswith("##") or heading.group(1)):
            number = (
                number_in(f"{heading.group(1)} {heading.group(2)}") if heading.group(1) else None
            )
            current = {
                "index": len(scenes),
                "number": number if number is not None else len(scenes) + 1,
                "title": heading.group(3).strip(),
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
