"""file_locator: the workspace's layout, the files a task is about, and its scope.

The layout (scenes or chapters, outline, canon cards) is declared in
`.control-room/workspace.json` or detected (see `tools/layout.py`). A task's args limit the
work: `scene_number`/`chapter_number` (or lists of them), `path`/`paths`, or a quoted
title; a number or path the workspace does not have is an error, never a silent pass.

Its receipt is bounded: every scene, chapter and canon card (the steps after it need them
all), but at most `MAX_LISTED` other and skipped paths, with their totals; a layout too big
for one receipt even so is an error that says how to narrow the workspace, never an event
over the store's limit.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

import orjson
from pydantic import Field, JsonValue

from controlroom.domain.errors import ToolError, WorkspaceError
from controlroom.tools.analysis import numbers_in, terms
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.layout import Layout, Unit, detect_layout, no_units_message
from controlroom.tools.outline import parse_outline
from controlroom.tools.workspace import Workspace

Need = Literal["units", "outline", "canon"]
_NUMBER_KEYS = ("scene_number", "chapter_number", "number")
_LIST_KEYS = ("scene_numbers", "chapter_numbers", "numbers")
#: Other and skipped paths the receipt lists; the rest are counted.
MAX_LISTED = 100
#: The most the receipt's output may weigh: half the store's default limit per event
#: (2 MiB), leaving room for the arguments and the summary beside it.
MAX_OUTPUT_BYTES = 1024 * 1024


class FileLocatorArgs(ToolArgs):
    search_criteria: str = ""
    scan_mode: Literal["FAST_SCAN", "DEEP_SCAN"] = "FAST_SCAN"
    max_results: int = Field(default=12, ge=1, le=500)
    #: The task's args: what the request is limited to.
    scope: dict[str, JsonValue] = Field(default_factory=dict)
    #: Where a requested number must exist: among the files, or in the outline (drafting).
    scope_in: Literal["files", "outline"] = "files"
    #: What the recipe cannot work without; missing is an error naming the expected layout.
    require: list[Need] = Field(default_factory=list)


def _whole_number(key: str, value: JsonValue) -> int:
    """A scope number as given: 4, or "4" (a form or a query string sends text). Anything
    else is refused, naming the argument: a scope silently widened to every unit would run
    (and pay for) work nobody asked for."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise ToolError(
        "file_locator", f"{key} must be a whole number, like {key}=4 (got {json.dumps(value)})"
    )


def _numbers(scope: dict[str, JsonValue]) -> list[int]:
    found: list[int] = []
    for key in _NUMBER_KEYS:
        value = scope.get(key)
        if value is not None:
            found.append(_whole_number(key, value))
    for key in _LIST_KEYS:
        value = scope.get(key)
        if value is None:
            continue
        items = value if isinstance(value, list) else [value]
        found.extend(_whole_number(key, v) for v in items)
    return list(dict.fromkeys(found))


def _paths(scope: dict[str, JsonValue]) -> list[str]:
    found: list[str] = []
    if isinstance(scope.get("path"), str):
        found.append(str(scope["path"]))
    paths = scope.get("paths")
    if isinstance(paths, list):
        found.extend(p for p in paths if isinstance(p, str))
    return found


def _span(numbers: list[int]) -> str:
    if not numbers:
        return "none"
    ordered = sorted(numbers)
    contiguous = ordered == list(range(ordered[0], ordered[-1] + 1))
    return f"{ordered[0]}–{ordered[-1]}" if contiguous else ", ".join(map(str, ordered))


def _scoped(
    args: FileLocatorArgs, layout: Layout, workspace: Workspace, outline_numbers: list[int]
) -> tuple[list[Unit] | None, str]:
    """The units in scope (None: no limit) and a sentence saying what the scope is."""
    unit = layout.unit
    numbers = _numbers(args.scope)
    paths = _paths(args.scope)
    titles = [
        str(q)
        for q in [*(args.scope.get("quoted") or []), args.scope.get("title")]  # type: ignore[misc]
        if isinstance(q, str)
    ]
    by_number = {u.number: u for u in layout.units}
    chosen: list[Unit] = []
    described: list[str] = []
    for number in numbers:
        if number in by_number:
            chosen.append(by_number[number])
        elif args.scope_in == "outline" and number in outline_numbers:
            pass  # drafting a unit the outline has and the manuscript does not yet
        elif args.scope_in == "outline" and layout.outline is not None:
            raise ToolError(
                "file_locator",
                f"{unit} {number} is not in the outline '{layout.outline}' "
                f"(it has {unit}s {_span(outline_numbers)})",
            )
        else:
            raise ToolError(
                "file_locator",
                f"{unit} {number} is not in this workspace (it has {unit}s "
                f"{_span([u.number for u in layout.units if u.number is not None])})",
            )
        described.append(f"{unit} {number}")
    for path in paths:
        try:
            exists = workspace.exists(path)
        except WorkspaceError as exc:
            raise ToolError("file_locator", str(exc)) from None
        if not exists:
            raise ToolError("file_locator", f"'{path}' is not a file in this workspace")
        match = next((u for u in layout.units if u.path == path), None)
        chosen.append(match or Unit(path, None, path))
        described.append(path)
    for title in titles:
        wanted = set(terms(title))
        match = next(
            (u for u in layout.units if wanted and wanted <= set(terms(u.title + " " + u.path))),
            None,
        )
        if match is not None:
            chosen.append(match)
            described.append(f"'{title}'")
    if not described:
        return None, f"all {len(layout.units)} {unit}s"
    unique = list({u.path: u for u in chosen}.values())
    return unique, "limited to " + ", ".join(described)


class FileLocator:
    name: ClassVar[str] = "file_locator"
    #: Reads the workspace: in a worker thread (tools/base.py `Tool`).
    slow: ClassVar[bool] = True
    description: ClassVar[str] = "Find the workspace's scenes, outline and canon; scope the task"
    args_model: ClassVar[type[ToolArgs]] = FileLocatorArgs

    def run(self, args: FileLocatorArgs, workspace: Workspace) -> ToolResult:
        try:
            layout = detect_layout(workspace)
        except WorkspaceError as exc:
            raise ToolError(self.name, str(exc)) from None
        if "units" in args.require and not layout.units:
            raise ToolError(self.name, no_units_message(layout))
        if "outline" in args.require and layout.outline is None:
            raise ToolError(
                self.name,
                "no outline found: name a file with 'outline' or 'synopsis' in it, or declare "
                "it in .control-room/workspace.json",
            )
        if "canon" in args.require and not layout.canon:
            raise ToolError(
                self.name,
                "no canon cards found: keep them under a folder named Compendium, Canon, "
                "Codex, Bible, Characters, Cast, People, Persons or Wiki (anywhere else, a "
                "card is known by two or more lines such as 'Eyes: grey' and 'Pronouns: "
                "she'), or declare them in .control-room/workspace.json (e.g. "
                '"canon": ["Notes/People/*.md"])',
            )
        outline_numbers = (
            [int(s["number"]) for s in parse_outline(workspace.read_text(layout.outline))]
            if layout.outline
            else []
        )
        scoped, scope_text = _scoped(args, layout, workspace, outline_numbers)
        query = set(terms(args.search_criteria))
        wanted_numbers = set(numbers_in(args.search_criteria))
        kinds = {u.path: "scene" for u in layout.units}
        kinds.update({p: "canon" for p in layout.canon})
        if layout.outline:
            kinds[layout.outline] = "outline"
        titles = {u.path: u.title for u in layout.units}
        rows: list[dict[str, Any]] = []
        for path in [*kinds, *layout.other]:
            kind = kinds.get(path, "other")
            title = titles.get(path, "")
            haystack = set(terms(path.replace("-", " ").replace("_", " ") + " " + title))
            if args.scan_mode == "DEEP_SCAN":
                haystack |= set(terms(workspace.read_text(path)))
            score = len(query & haystack)
            if kind == "scene" and wanted_numbers & set(numbers_in(title + " " + path)):
                score += 5
            rows.append({"path": path, "kind": kind, "title": title, "score": score})
        rows.sort(key=lambda r: (-int(str(r["score"])), str(r["path"])))
        in_order = [u.path for u in (scoped if scoped is not None else layout.units)]
        ranked = [str(r["path"]) for r in rows if r["path"] in set(in_order)]
        ranked += [p for p in in_order if p not in ranked]
        counts = {
            "scene": len(layout.units),
            "outline": int(layout.outline is not None),
            "canon": len(layout.canon),
            "other": len(layout.other),
        }
        output: dict[str, Any] = {
            "query_terms": sorted(query),
            "matches": list(rows[: args.max_results]),
            "scenes": ranked,
            "scenes_in_order": in_order,
            # Every unit the request names ("chapters 1-12", the manuscript), in order; empty
            # when it names none (then `scenes[0]` is the best match).
            "scoped_units": [u.path for u in scoped] if scoped is not None else [],
            "outline": layout.outline,
            "canon": list(layout.canon),
            "counts": counts,
            "total_files": len(rows),
            "unit": layout.unit,
            "scope": scope_text,
            "layout": layout.as_dict(max_listed=MAX_LISTED),
        }
        _check_size(output, layout)
        best = ranked[0] if ranked else "none"
        summary = (
            f"{len(rows)} files ({layout.source} layout): {counts['scene']} {layout.unit}s, "
            f"{counts['outline']} outline, {counts['canon']} canon cards, {counts['other']} "
            f"other; scope: {scope_text}; best {layout.unit}: {best}"
        )
        if left_out := layout.left_out():
            summary += f"; left out: {left_out}"
        summary += "".join(f"\n! {w}" for w in layout.warnings)
        return ToolResult(output, summary)


def _check_size(output: dict[str, Any], layout: Layout) -> None:
    size = len(orjson.dumps(output))
    if size > MAX_OUTPUT_BYTES:
        raise ToolError(
            FileLocator.name,
            f"the workspace's layout is too big to record: {len(layout.units)} {layout.unit}s "
            f"and {len(layout.canon)} canon cards make {size:,} bytes, over "
            f"{MAX_OUTPUT_BYTES:,}; leave folders that are not manuscript out with a "
            f".gitignore, or declare where the {layout.unit}s are in "
            ".control-room/workspace.json",
        )
