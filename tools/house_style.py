"""A new scene or chapter written as the workspace writes its others: the same heading form
("CHAPTER VIII." beside "CHAPTER VII.", "# Scene 4: The Reckoning" beside "# Scene 3: The
Archive") and the same line endings (CRLF beside CRLF)."""

from __future__ import annotations

import re

from controlroom.domain.errors import WorkspaceError
from controlroom.tools.layout import Unit, detect_layout, number_in
from controlroom.tools.workspace import Workspace

_ROMAN = (
    (1000, "m"),
    (900, "cm"),
    (500, "d"),
    (400, "cd"),
    (100, "c"),
    (90, "xc"),
    (50, "l"),
    (40, "xl"),
    (10, "x"),
    (9, "ix"),
    (5, "v"),
    (4, "iv"),
    (1, "i"),
)
_DRAFT_HEADING = re.compile(
    r"^(?:#{1,6}\s*)?(?:(?:chapter|scene|ch\.?)\s+\S+?\s*(?:[:.\-–—]\s*|\s+|$))?(.*)$",
    re.IGNORECASE,
)


def roman(number: int) -> str:
    out = []
    for value, letters in _ROMAN:
        while number >= value:
            out.append(letters)
            number -= value
    return "".join(out)


def house_style(workspace: Workspace, relative: str, text: str) -> str:
    """`text` as a new unit at `relative` should read, next to the units beside it;
    unchanged when it is not a unit's file or no unit lies beside it."""
    number = number_in(relative.rsplit("/", 1)[-1])
    try:
        layout = detect_layout(workspace)
    except WorkspaceError:
        return text
    folder = relative.rpartition("/")[0]
    beside = [
        u
        for u in layout.units
        if u.path != relative and u.number is not None and u.path.rpartition("/")[0] == folder
    ]
    if number is None or not beside:
        return text
    sample = min(beside, key=lambda u: (abs((u.number or 0) - number), u.path))
    text = _with_heading(workspace.read_text(sample.path), sample, number, text)
    return text.replace("\n", "\r\n") if workspace.uses_crlf(sample.path) else text


def _with_heading(sample_text: str, sample: Unit, number: int, draft: str) -> str:
    first = next((line for line in sample_text.splitlines() if line.strip()), "")
    assert sample.number is not None
    found = re.search(rf"(?<![\w]){sample.number}(?![\w])", first)
    written = str(number)
    if found is None:
        found = re.search(rf"(?<![\w]){roman(sample.number)}(?![\w])", first, re.IGNORECASE)
        if found is None:
            return draft  # a heading without its number: nothing to follow
        numeral = roman(number)
        written = numeral.upper() if found.group(0).isupper() else numeral
    prefix, suffix = first[: found.start()], first[found.end() :]
    lines = draft.split("\n")
    at = next((i for i, line in enumerate(lines) if line.strip()), None)
    is_heading = at is not None and (
        lines[at].lstrip().startswith("#") or re.match(r"\s*(chapter|scene)\b", lines[at], re.I)
    )
    title = ""
    if at is not None and is_heading:
        matched = _DRAFT_HEADING.match(lines[at].strip())
        title = matched.group(1).strip() if matched else ""
    separator = re.match(r"[\s:.\-–—]*", suffix)
    if title and suffix.strip(" :.-–—"):  # the house heading carries a title: keep the draft's
        heading = f"{prefix}{written}{separator.group(0) if separator else ' '}{title}"
    else:
        heading = f"{prefix}{written}{suffix}"
    if at is not None and is_heading:
        lines[at] = heading
        return "\n".join(lines)
    return f"{heading}\n\n{draft}"
