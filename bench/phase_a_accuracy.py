"""Precision and recall of the consistency tools on a real novel, and phase A timing.

Accuracy: `examples/dorian` (chapters I–VII of The Picture of Dorian Gray) is copied, the
contradictions listed in `bench/dorian_plants.json` are planted in the copy, and the
`consistency_checker` runs over the chapters the file locator finds. A finding is true when
it names a planted fact on the line of the plant. The unmodified text is checked too: every
finding there is false. Timing: the whole novel (twenty chapters, ~440 KB, from the same
source files, with the example's cards and outline) through the phase A tools of every
bundled recipe, each from a cold cache.

    .venv/bin/python bench/phase_a_accuracy.py [--novel PATH_TO_GUTENBERG_TXT]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from controlroom.prompts.registry import PromptRegistry
from controlroom.recipes.catalog import RecipeCatalog
from controlroom.tools.base import ToolRegistry
from controlroom.tools.text import read_document
from controlroom.tools.workspace import Workspace

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "dorian"
PLANTS = REPO / "bench" / "dorian_plants.json"
TOOLS = ToolRegistry.default(with_plugins=False)


def findings_of(root: Path) -> tuple[list[dict[str, Any]], int]:
    ws = Workspace(root)
    found = TOOLS.execute("file_locator", {"require": ["units", "canon"]}, ws).output
    out = TOOLS.execute(
        "consistency_checker",
        {"scene_paths": found["scenes_in_order"], "canon_paths": found["canon"]},
        ws,
    ).output
    size = sum(len(ws.read_text(p).encode()) for p in found["scenes_in_order"])
    return list(out["findings"]), size


def _loose(text: str) -> re.Pattern[str]:
    """The text with any run of spaces matching any whitespace: plants cross wrapped lines."""
    return re.compile(r"\s+".join(re.escape(w) for w in text.split()))


def plant(root: Path, plants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for entry in plants:
        path = root / entry["path"]
        text = path.read_bytes().decode("utf-8")
        found = _loose(entry["find"]).search(text)
        if found is None:
            raise SystemExit(f"plant text not found in {entry['path']}: {entry['find']}")
        path.write_bytes((text[: found.start()] + entry["replace"] + text[found.end() :]).encode())
    placed = []
    for entry in plants:
        text = (root / entry["path"]).read_bytes().decode("utf-8").replace("\r\n", "\n")
        found = _loose(entry["replace"]).search(text)
        assert found is not None
        first = text[: found.start()].count("\n") + 1
        placed.append({**entry, "lines": range(first, first + found.group(0).count("\n") + 1)})
    return placed


def matches(finding: dict[str, Any], entry: dict[str, Any]) -> bool:
    if finding["path"] != entry["path"] or finding["line"] not in entry["lines"]:
        return False
    if entry["type"] == "name_variant":
        return finding["type"] == "name_variant"
    return finding.get("entity") == entry["entity"] and finding.get("attribute") == entry["type"]


def in_source(finding: dict[str, Any], known: list[dict[str, Any]]) -> bool:
    """A slip the source text itself has (found, and true, but not planted)."""
    return any(finding["path"] == k["path"] and finding["line"] == k["line"] for k in known)


def accuracy() -> dict[str, Any]:
    data = json.loads(PLANTS.read_text(encoding="utf-8"))
    plants, known = data["plants"], data.get("in_source", [])
    with tempfile.TemporaryDirectory() as tmp:
        clean = Path(tmp) / "clean"
        shutil.copytree(EXAMPLE, clean)
        unmodified, size = findings_of(clean)
        planted_root = Path(tmp) / "planted"
        shutil.copytree(EXAMPLE, planted_root)
        placed = plant(planted_root, plants)
        findings, _ = findings_of(planted_root)
    per_type: dict[str, dict[str, int]] = defaultdict(lambda: {"planted": 0, "found": 0, "fp": 0})
    matched: set[int] = set()
    for entry in placed:
        per_type[entry["type"]]["planted"] += 1
        hits = [i for i, f in enumerate(findings) if matches(f, entry)]
        if hits:
            per_type[entry["type"]]["found"] += 1
            matched.update(hits)
        else:
            print(f"  missed: {entry['type']:<12} {entry['path']}: {entry['replace']}")
    for i, finding in enumerate(findings):
        if i not in matched and in_source(finding, known):
            print(f"  true, in the source itself: {finding['message']}")
        elif i not in matched:
            kind = finding.get("attribute") or finding["type"]
            per_type[kind]["fp"] += 1
            print(f"  false:  {finding['message']}")
    unmodified = [f for f in unmodified if not in_source(f, known)]
    for finding in unmodified:
        print(f"  false on unmodified text: {finding['message']}")
    return {
        "per_type": dict(per_type),
        "unmodified_false": len(unmodified),
        "unmodified_kb": size / 1024,
    }


def timing(novel: Path) -> list[tuple[str, float, int]]:
    raw = novel.read_bytes().decode("utf-8")
    lines = raw.split("\r\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("CHAPTER ")]
    catalog = RecipeCatalog.load(
        None, TOOLS.names(), PromptRegistry.for_workspace(None).prompt_types()
    )
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "novel"
        shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("Chapters"))
        chapters = root / "Story" / "Chapters"
        chapters.mkdir()
        for n, start in enumerate(starts, start=1):
            end = starts[n] if n < len(starts) else len(lines)
            (chapters / f"Chapter {n}.md").write_bytes("\r\n".join(lines[start:end]).encode())
        size = sum(p.stat().st_size for p in chapters.iterdir())
        for recipe in catalog.recipes():
            read_document.cache_clear()
            ws = Workspace(root)
            started = time.perf_counter()
            found = TOOLS.execute("file_locator", {"search_criteria": recipe.label}, ws).output
            scenes, canon = found["scenes_in_order"], found["canon"]
            for step in recipe.phase_a[1:]:
                tool = getattr(step, "tool", "")
                args: dict[str, Any] = {
                    "consistency_checker": {"scene_paths": scenes, "canon_paths": canon},
                    "canon_checker": {"scene_paths": scenes, "canon_paths": canon},
                    "prose_analyzer": {"paths": scenes},
                    "stakes_mapper": {"paths": scenes},
                    "reader_experience_simulator": {"paths": scenes},
                    "scene_draft_validator": {
                        "scene_path": scenes[0],
                        "outline_path": found["outline"],
                    },
                    "outline_analyzer": {"outline_path": found["outline"]},
                }[tool]
                TOOLS.execute(tool, args, ws)
            results.append((recipe.recipe_id, time.perf_counter() - started, size))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--novel", type=Path, help="the whole Gutenberg text (CRLF) for timing")
    ns = parser.parse_args()
    result = accuracy()
    print(f"{'fact type':<14}{'planted':>8}{'found':>7}{'false':>7}{'precision':>11}{'recall':>8}")
    total = {"planted": 0, "found": 0, "fp": 0}
    for kind, row in sorted(result["per_type"].items()):
        for key in total:
            total[key] += row[key]
        precision = row["found"] / (row["found"] + row["fp"]) if row["found"] + row["fp"] else 1
        recall = row["found"] / row["planted"] if row["planted"] else 1
        print(
            f"{kind:<14}{row['planted']:>8}{row['found']:>7}{row['fp']:>7}"
            f"{precision:>11.2f}{recall:>8.2f}"
        )
    p = total["found"] / (total["found"] + total["fp"]) if total["found"] + total["fp"] else 1
    r = total["found"] / total["planted"]
    print(f"{'all':<14}{total['planted']:>8}{total['found']:>7}{total['fp']:>7}{p:>11.2f}{r:>8.2f}")
    per50 = result["unmodified_false"] / (result["unmodified_kb"] / 50)
    print(
        f"unmodified text: {result['unmodified_false']} false finding(s) in "
        f"{result['unmodified_kb']:.0f} KB ({per50:.2f} per 50 KB)"
    )
    if ns.novel:
        for recipe_id, seconds, size in timing(ns.novel):
            print(f"phase A {recipe_id:<28} {size / 1024:.0f} KB in {seconds:.2f} s")


if __name__ == "__main__":
    main()
