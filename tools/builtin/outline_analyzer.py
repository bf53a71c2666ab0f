"""outline_analyzer: the structure of the story outline, and the beat a task is about."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from controlroom.domain.errors import ToolError, WorkspaceError
from controlroom.tools.analysis import numbers_in, terms, title_of
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.layout import Layout, detect_layout, unit_path_for
from controlroom.tools.outline import parse_outline
from controlroom.tools.workspace import Workspace

__all__ = ["OutlineAnalyzer", "parse_outline", "pick_focus"]


class OutlineAnalyzerArgs(ToolArgs):
    outline_path: str
    mode: Literal["structure", "beats"] = "structure"
    focus: str | None = None
    #: The task's args: `scene_number` / `chapter_number` name the focus unit.
    scope: dict[str, Any] | None = None
    #: Drafting: the focus must be an outline unit with no file yet, else fail here, in
    #: phase A, before any model is paid to draft what cannot be written.
    drafting: bool = False


_NEXT = re.compile(r"\b(?:next|following|new)\s+(?:scene|chapter|unit)\b", re.IGNORECASE)


def scoped_number(scope: dict[str, Any] | None) -> int | None:
    """The unit number the task's args name (`--arg chapter_number=13`), if any."""
    for key in ("scene_number", "chapter_number", "number"):
        value = (scope or {}).get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
    return None


def pick_focus(scenes: list[dict[str, Any]], focus: str) -> dict[str, Any] | None:
    if _NEXT.search(focus):
        return None  # "the next chapter": the first outline unit without a file
    numbers = set(numbers_in(focus))
    for scene in scenes:
        if scene["number"] in numbers:
            return scene
    wanted = set(terms(focus))
    scored = [(len(wanted & set(terms(s["title"]))), -s["index"], s) for s in scenes]
    best = max(scored, default=None, key=lambda row: (row[0], row[1]))
    return best[2] if best and best[0] > 0 else None


class OutlineAnalyzer:
    name: ClassVar[str] = "outline_analyzer"
    #: Reads the workspace: in a worker thread (tools/base.py `Tool`).
    slow: ClassVar[bool] = True
    description: ClassVar[str] = "Parse the outline into scenes and beats; find the focus scene"
    args_model: ClassVar[type[ToolArgs]] = OutlineAnalyzerArgs

    def run(self, args: OutlineAnalyzerArgs, workspace: Workspace) -> ToolResult:
        text = workspace.read_text(args.outline_path)
        scenes = parse_outline(text)
        number = scoped_number(args.scope)
        if number is not None:
            focus = next((s for s in scenes if s["number"] == number), None)
        else:
            focus = pick_focus(scenes, args.focus) if args.focus else None
        target = _target(workspace, focus, scenes, _unit_word(text))
        if args.drafting:
            _require_draftable(args, scenes, number, target, _unit_word(text))
        beat_count = sum(len(s["beats"]) for s in scenes)
        output: dict[str, Any] = {
            "outline_path": args.outline_path,
            "title": title_of(text),
            "scenes": scenes,
            "scene_count": len(scenes),
            "beat_count": beat_count,
            "focus": focus,
            "target": target,
        }
        lines = [
            f"Outline '{title_of(text) or args.outline_path}': {len(scenes)} scenes, "
            f"{beat_count} beats"
        ]
        if focus:
            lines.append(f"Focus: Scene {focus['number']} '{focus['title']}'")
            lines.append(f"Characters: {', '.join(focus['characters']) or 'unspecified'}")
            lines.extend(f"- beat: {beat}" for beat in focus["beats"])
        else:
            lines.extend(
                f"- Scene {s['number']}: {s['title']} ({len(s['beats'])} beats; characters: "
                f"{', '.join(s['characters']) or 'none listed'})"
                for s in scenes
            )
        return ToolResult(output, "\n".join(lines))


def _unit_word(outline: str) -> str:
    """What the outline's sections are: chapters when a heading says so, else scenes."""
    return "chapter" if re.search(r"^#+\s*chapter\b", outline, re.I | re.M) else "scene"


def _target(
    workspace: Workspace,
    focus: dict[str, Any] | None,
    scenes: list[dict[str, Any]],
    unit_word: str,
) -> dict[str, Any] | None:
    """The file of the focus scene: where it is, or would go next to the other units.
    Without a focus (`draft the next scene`), the first outline scene with no file yet."""
    try:
        layout: Layout | None = detect_layout(workspace)
    except WorkspaceError:
        layout = None  # no manuscript yet: the first unit starts one
    if focus is None:
        have = {unit.number for unit in layout.units} if layout else set()
        focus = next((s for s in scenes if s["number"] not in have), None)
        if focus is None:
            return None
    path = unit_path_for(layout, focus["number"], focus["title"]) if layout else None
    if layout is None or path is None:
        # The first unit of a new book: in a folder named for the outline's units.
        kind = unit_word.capitalize()
        name = f"{kind} {focus['number']} - {focus['title']}".strip(" -")
        path = f"{kind}s/{re.sub(r'[^0-9A-Za-z ._-]+', '', name).strip()}.md"
    return {
        "path": path,
        "exists": workspace.exists(path),
        "number": focus["number"],
        "unit": layout.unit if layout and layout.units else unit_word,
    }


def _listing(scenes: list[dict[str, Any]], unit: str) -> str:
    numbers = [int(s["number"]) for s in scenes]
    if not numbers:
        return "the outline has no scene or chapter headings"
    if numbers == list(range(numbers[0], numbers[-1] + 1)) and len(numbers) > 2:
        return f"the outline has {unit}s {numbers[0]}–{numbers[-1]}"
    return f"the outline has {unit}s " + ", ".join(str(n) for n in numbers)


def _require_draftable(
    args: OutlineAnalyzerArgs,
    scenes: list[dict[str, Any]],
    number: int | None,
    target: dict[str, Any] | None,
    unit_word: str,
) -> None:
    """Refuse, naming what exists, a draft that cannot be written: a unit the outline does
    not have, one already written, or no unit left to draft."""
    listing = _listing(scenes, target["unit"] if target else unit_word)
    named = [number] if number is not None else []
    if not named and args.focus and not _NEXT.search(args.focus):
        named = numbers_in(args.focus)
    if named and not any(s["number"] in named for s in scenes):
        wanted = ", ".join(str(n) for n in named)
        raise ToolError(
            "outline_analyzer", f"nothing to draft: {listing}, not {wanted} ({args.outline_path})"
        )
    if target is None:
        raise ToolError(
            "outline_analyzer",
            f"nothing to draft: every unit of the outline already has a file ({listing}); "
            "name one to revise instead, or add a section to the outline",
        )
    if target["exists"]:
        raise ToolError(
            "outline_analyzer",
            f"{target['unit']} {target['number']} is already written at '{target['path']}': "
            "drafting would overwrite it; revise it instead, or name a unit the outline has "
            "without a file",
        )
