"""A new scene or chapter written as the workspace writes its others: the same heading form
("CHAPTER VIII." beside "CHAPTER VII.", "# Scene 4: The Reckoning" beside "# Scene 3: The
Archive") and the same line endings (CRLF beside CRLF)."""

from __future__ import annotations

import re

from controlroom.domain.errors import WorkspaceError
from controlroom.tools.layout import Unit, detect_layout, number_in, to_roman
from controlroom.tools.outline import parse_outline
from controlroom.tools.workspace import Workspace

#: A model's talk before a draft ("Here is the scene you asked for:", "Sure! Here's
#: chapter 4.") and after it ("Let me know if you'd like any changes!").
_CHAT_BEFORE = re.compile(
    r"^\s*(?:sure|certainly|of course|absolutely|okay|ok|here\s+is|here's|here\s+are|below\s+is|"
    r"i(?:'ve| have)\s+(?:written|drafted|revised))\b|:\s*$",
    re.IGNORECASE,
)
_CHAT_AFTER = re.compile(
    r"^\s*(?:let me know|i hope (?:this|that this|you (?:enjoy|like)|it (?:helps|works))|"
    r"feel free|would you like (?:me|any|a)|if you(?:'d| would) like (?:me|any|a|changes)|"
    r"i can (?:also|adjust|revise)|happy to (?:adjust|revise|help)|shall i|do you want me)\b",
    re.IGNORECASE,
)
#: Talk is a line or two; a longer line is prose, however it begins.
_CHAT_LINE_MAX = 160
_DRAFT_HEADING = re.compile(
    r"^(?:#{1,6}\s*)?(?:(?:chapter|scene|ch\.?)\s+\S+?\s*(?:[:.\-–—]\s*|\s+|$))?(.*)$",
    re.IGNORECASE,
)


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
    text = without_chat(text)
    if number is None or not beside:
        return text
    sample = min(beside, key=lambda u: (abs((u.number or 0) - number), u.path))
    title = _outline_title(workspace, layout.outline, number)
    text = _with_heading(workspace.read_text(sample.path), sample, number, text, title)
    return text.replace("\n", "\r\n") if workspace.uses_crlf(sample.path) else text


def without_chat(draft: str) -> str:
    """The draft without a model's talk around it: "Here is the scene you asked for:"
    before its heading, "Let me know if you'd like any changes!" after its last line.
    Only short lines of that kind, at either end, are taken off; the prose is never
    touched."""
    lines = draft.split("\n")
    filled = [i for i, line in enumerate(lines) if line.strip()]
    if not filled:
        return draft
    first, last = filled[0], filled[-1]
    heading = next((i for i in filled[:3] if _is_heading(lines[i])), None)
    if (
        heading is not None
        and heading > first
        and all(
            _CHAT_BEFORE.search(lines[i]) and len(lines[i]) <= _CHAT_LINE_MAX
            for i in filled
            if i < heading
        )
    ):
        first = heading
    while last > first and _CHAT_AFTER.search(lines[last]) and len(lines[last]) <= _CHAT_LINE_MAX:
        last = max((i for i in filled if i < last), default=first)
        if lines[last].strip() in ("---", "***", "___"):
            last = max((i for i in filled if i < last), default=first)
    kept = lines[first : last + 1]
    ending = "\n" if draft.endswith("\n") else ""
    return "\n".join(kept).rstrip("\n") + ending


def _is_heading(line: str) -> bool:
    return line.lstrip().startswith("#") or bool(re.match(r"\s*(chapter|scene)\b", line, re.I))


def _outline_title(workspace: Workspace, outline: str | None, number: int) -> str:
    """The outline's title for unit `number` ("The Reckoning"), "" when it has none."""
    if outline is None:
        return ""
    try:
        sections = parse_outline(workspace.read_text(outline))
    except WorkspaceError:
        return ""
    for section in sections:
        if section.get("number") == number:
            return str(section.get("title") or "").strip()
    return ""


def _with_heading(
    sample_text: str, sample: Unit, number: int, draft: str, outline_title: str = ""
) -> str:
    first = next((line for line in sample_text.splitlines() if line.strip()), "")
    assert sample.number is not None
    found = re.search(rf"(?<![\w]){sample.number}(?![\w])", first)
    written = str(number)
    if found is None:
        found = re.search(rf"(?<![\w]){to_roman(sample.number)}(?![\w])", first, re.IGNORECASE)
        if found is None:
            return draft  # a heading without its number: nothing to follow
        numeral = to_roman(number)
        written = numeral.upper() if found.group(0).isupper() else numeral
    prefix, suffix = first[: found.start()], first[found.end() :]
    lines = draft.split("\n")
    at = next((i for i, line in enumerate(lines) if line.strip()), None)
    is_heading = at is not None and _is_heading(lines[at])
    title = ""
    if at is not None and is_heading:
        matched = _DRAFT_HEADING.match(lines[at].strip())
        title = matched.group(1).strip() if matched else ""
    separator = re.match(r"[\s:.\-–—]*", suffix)
    title = title or outline_title
    if suffix.strip(" :.-–—"):
        # the house heading carries a title: the draft's, else the outline's, never the
        # neighbour's ("# Scene 4: The Archive" was scene 3's)
        if title:
            heading = f"{prefix}{written}{separator.group(0) if separator else ' '}{title}"
        else:
            heading = f"{prefix}{written}"
    else:
        heading = f"{prefix}{written}{suffix}"
    if at is not None and is_heading:
        lines[at] = heading
        return "\n".join(lines)
    return f"{heading}\n\n{draft}"
