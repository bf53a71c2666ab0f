"""file_locator: find the workspace files a task is about, and classify them."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from controlroom.tools.analysis import numbers_in, terms, title_of
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.workspace import Workspace


class FileLocatorArgs(ToolArgs):
    search_criteria: str = ""
    scan_mode: Literal["FAST_SCAN", "DEEP_SCAN"] = "FAST_SCAN"
    max_results: int = Field(default=12, ge=1, le=500)


def classify(path: str) -> str:
    lowered = path.lower()
    name = lowered.rsplit("/", 1)[-1]
    if "outline" in name:
        return "outline"
    if "/scenes/" in f"/{lowered}" or name.startswith("scn-"):
        return "scene"
    if (
        "compendium/" in lowered
        or "canon/" in lowered
        or name.startswith(("char-", "loc-", "item-"))
    ):
        return "canon"
    return "other"


class FileLocator:
    name: ClassVar[str] = "file_locator"
    description: ClassVar[str] = "Find and classify workspace files matching the task"
    args_model: ClassVar[type[ToolArgs]] = FileLocatorArgs

    def run(self, args: FileLocatorArgs, workspace: Workspace) -> ToolResult:
        query = set(terms(args.search_criteria))
        wanted_numbers = set(numbers_in(args.search_criteria))
        rows: list[dict[str, Any]] = []
        for path in workspace.text_files:
            text = workspace.read_text(path)
            title = title_of(text) or ""
            kind = classify(path)
            haystack = set(terms(path.replace("-", " ").replace("_", " ") + " " + title))
            if args.scan_mode == "DEEP_SCAN":
                haystack |= set(terms(text))
            score = len(query & haystack)
            if kind == "scene" and wanted_numbers & set(numbers_in(title + " " + path)):
                score += 5
            rows.append({"path": path, "kind": kind, "title": title, "score": score})
        rows.sort(key=lambda r: (-int(str(r["score"])), str(r["path"])))
        by_kind: dict[str, list[str]] = {"scene": [], "outline": [], "canon": [], "other": []}
        for row in rows:
            by_kind[str(row["kind"])].append(str(row["path"]))
        outline = sorted(by_kind["outline"])[0] if by_kind["outline"] else None
        output: dict[str, Any] = {
            "query_terms": sorted(query),
            "matches": list(rows[: args.max_results]),
            "scenes": list(by_kind["scene"]),
            "scenes_in_order": sorted(by_kind["scene"]),
            "outline": outline,
            "canon": sorted(by_kind["canon"]),
            "counts": {k: len(v) for k, v in by_kind.items()},
            "total_files": len(rows),
        }
        counts = output["counts"]
        assert isinstance(counts, dict)
        best = by_kind["scene"][0] if by_kind["scene"] else "none"
        summary = (
            f"{len(rows)} files found: {counts['scene']} scenes, {counts['outline']} outline, "
            f"{counts['canon']} canon cards, {counts['other']} other; best scene: {best}"
        )
        return ToolResult(output, summary)
