"""outline_analyzer: the structure of the story outline, and the beat a task is about."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from controlroom.tools.analysis import numbers_in, terms, title_of
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.workspace import Workspace

_SCENE_HEADING = re.compile(r"^#{2,4}\s+(?:Scene\s+(\d+)\s*[:.\-–—]?\s*)?(.*?)\s*$", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_CHARACTERS = re.compile(
    r"^\s*(?:[-*+]\s*)?\*{0,2}(?:characters|cast|pov)\*{0,2}\s*:\s*\*{0,2}(.*)$", re.IGNORECASE
)


class OutlineAnalyzerArgs(ToolArgs):
    outline_path: str
    mode: Literal["structure", "beats"] = "structure"
    focus: str | None = None


def parse_outline(text: str) -> list[dict[str, Any]]:
    scenes: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        heading = _SCENE_HEADING.match(line)
        if heading and line.lstrip().startswith("##"):
            number = int(heading.group(1)) if heading.group(1) else len(scenes) + 1
            current = {
                "index": len(scenes),
                "number": number,
                "title": heading.group(2).strip(),
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
