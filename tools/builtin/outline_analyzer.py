"""outline_analyzer: the structure of the story outline, and the beat a task is about."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from controlroom.domain.errors import WorkspaceError
from controlroom.tools.analysis import numbers_in, terms, title_of
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.layout import detect_layout, unit_path_for
from controlroom.tools.outline import parse_outline
from controlroom.tools.workspace import Workspace

__all__ = ["OutlineAnalyzer", "parse_outline", "pick_focus"]


class OutlineAnalyzerArgs(ToolArgs):
    outline_path: str
    mode: Literal["structure", "beats"] = "structure"
    focus: str | None = None


def pick_focus(scenes: list[dict[str, Any]], focus: str) -> dict[str, Any] | None:
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
        focus = pick_focus(scenes, args.focus) if args.focus else None
        beat_count = sum(len(s["beats"]) for s in scenes)
        output: dict[str, Any] = {
            "outline_path": args.outline_path,
            "title": title_of(text),
            "scenes": scenes,
            "scene_count": len(scenes),
            "beat_count": beat_count,
            "focus": focus,
            "target": _target(workspace, focus, scenes),
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


def _target(
    workspace: Workspace, focus: dict[str, Any] | None, scenes: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The file of the focus scene: where it is, or would go next to the other units.
    Without a focus (`draft the next scene`), the first outline scene with no file yet."""
    try:
        layout = detect_layout(workspace)
    except WorkspaceError:
        return None
    if focus is None:
        have = {unit.number for unit in layout.units}
        focus = next((s for s in scenes if s["number"] not in have), None)
        if focus is None:
            return None
    path = unit_path_for(layout, focus["number"], focus["title"])
    if path is None:
        return None
    return {"path": path, "exists": workspace.exists(path), "number": focus["number"]}
