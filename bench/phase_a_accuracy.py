"""Precision and recall of the consistency tools on public-domain novels, and phase A timing.

Accuracy: each novel of `bench/corpus/` (a few chapters as published, laid out as a writer
would, each in its own layout, with canon cards written from the text) has a label file
`bench/corpus/<novel>.json`: the contradictions to plant (file, exact text, replacement, the
fact it breaks), the facts the unmodified text states (for coverage), and whether the novel
was used to develop the tools (`dev`), held out (`held_out`), or added blind (`blind`: written
by someone who had not seen the rules, after the rules were frozen, measured once). Dorian Gray
(`examples/dorian`, `bench/dorian_plants.json`) is reported apart: the tools were tuned on it.
For each novel the `consistency_checker` runs over the chapters the file locator finds, on
the unmodified copy and on a planted copy. A finding is true when it names a planted fact on
the line of the plant; every finding on the unmodified text is false. Coverage counts the
stated facts the check confirmed on the unmodified text; facts the tools cannot check are
listed as such, with the reason the tool gives.

    .venv/bin/python bench/phase_a_accuracy.py [--novel NAME ...] [--verbose]
        [--timing PATH_TO_GUTENBERG_TXT]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
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
CORPUS = REPO / "bench" / "corpus"
TOOLS = ToolRegistry.default(with_plugins=False)
KINDS = ("eyes", "hair", "height", "handedness", "name_variant")


@dataclass
class Novel:
    name: str
    root: Path
    split: str
    labels: dict[str, Any]


def novels() -> list[Novel]:
    found = [
        Novel(
            "dorian_gray",
            EXAMPLE,
            "tuned",
            {"title": "The Picture of Dorian Gray", "stated": [], **_json(PLANTS)},
        )
    ]
    for label_file in sorted(CORPUS.glob("*.json")):
        labels = _json(label_file)
        found.append(Novel(label_file.stem, REPO / labels["workspace"], labels["split"], labels))
    return found


def _json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def check(root: Path) -> tuple[dict[str, Any], int]:
    ws = Workspace(root)
    found = TOOLS.execute("file_locator", {"require": ["units", "canon"]}, ws).output
    out = TOOLS.execute(
        "consistency_checker",
        {"scene_paths": found["scenes_in_order"], "canon_paths": found["canon"]},
        ws,
    ).output
    size = sum(len(ws.read_text(p).encode()) for p in found["scenes_in_order"])
    return dict(out), size


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
        return bool(finding["type"] == "name_variant")
    return bool(
        finding.get("entity") == entry["entity"] and finding.get("attribute") == entry["type"]
    )


def in_source(finding: dict[str, Any], known: list[dict[str, Any]]) -> bool:
    """A slip the source text itself has (found, and true, but not planted)."""
    return any(finding["path"] == k["path"] and finding["line"] == k["line"] for k in known)


def _kind(finding: dict[str, Any]) -> str:
    return str(finding.get("attribute") or finding["type"])


def accuracy(novel: Novel, verbose: bool = False) -> dict[str, Any]:
    plants, known = novel.labels["plants"], novel.labels.get("in_source", [])
    with tempfile.TemporaryDirectory() as tmp:
        clean = Path(tmp) / "clean"
        shutil.copytree(novel.root, clean)
        unmodified, size = check(clean)
        planted_root = Path(tmp) / "planted"
        shutil.copytree(novel.root, planted_root)
        placed = plant(planted_root, plants)
        planted, _ = check(planted_root)
    findings = planted["findings"]
    per_kind: dict[str, dict[str, int]] = defaultdict(
        lambda: {"planted": 0, "found": 0, "fp": 0, "clean_fp": 0, "stated": 0, "covered": 0}
    )
    matched: set[int] = set()
    notes: list[str] = []
    for entry in placed:
        per_kind[entry["type"]]["planted"] += 1
        hits = [i for i, f in enumerate(findings) if matches(f, entry)]
        if hits:
            per_kind[entry["type"]]["found"] += 1
            matched.update(hits)
        else:
            notes.append(f"  missed: {entry['type']:<12} {entry['path']}: {entry['replace']}")
    for i, finding in enumerate(findings):
        if i not in matched and in_source(finding, known):
            notes.append(f"  true, in the source itself: {finding['message']}")
        elif i not in matched:
            per_kind[_kind(finding)]["fp"] += 1
            notes.append(f"  false:  {finding['message']}")
    false_clean = [f for f in unmodified["findings"] if not in_source(f, known)]
    for finding in false_clean:
        per_kind[_kind(finding)]["clean_fp"] += 1
        notes.append(f"  false on unmodified text: {finding['message']}")
    status = {(r["entity"], r["attribute"].lower()): r for r in unmodified["facts"]}
    for fact in novel.labels.get("stated", []):
        row = per_kind[fact["attribute"]]
        row["stated"] += 1
        card_row = status.get((fact["entity"], fact["attribute"]))
        if card_row is not None and card_row["status"] == "confirmed":
            row["covered"] += 1
        else:
            notes.append(
                f"  not covered: {fact['entity']} {fact['attribute']} ({fact['evidence']})"
            )
    unchecked = [r for r in unmodified["facts"] if not r["checked"]]
    if verbose:
        print("\n".join(notes))
    return {
        "per_kind": dict(per_kind),
        "unmodified_false": len(false_clean),
        "unmodified_pass": not false_clean,
        "unmodified_kb": size / 1024,
        "unchecked": unchecked,
    }


def _ratio(num: int, den: int) -> str:
    return f"{num / den:.2f}" if den else "  - "


def table(title: str, rows: dict[str, dict[str, int]]) -> dict[str, int]:
    print(title)
    print(
        f"  {'fact kind':<13}{'planted':>8}{'found':>6}{'false':>6}{'precision':>10}"
        f"{'recall':>7}{'false (unmodified)':>20}{'coverage':>10}"
    )
    total = {"planted": 0, "found": 0, "fp": 0, "clean_fp": 0, "stated": 0, "covered": 0}
    for kind in [*KINDS, *sorted(k for k in rows if k not in KINDS)]:
        row = rows.get(kind)
        if row is None:
            continue
        for key in total:
            total[key] += row[key]
        _row(kind, row)
    _row("all", total)
    return total


def _row(kind: str, row: dict[str, int]) -> None:
    print(
        f"  {kind:<13}{row['planted']:>8}{row['found']:>6}{row['fp']:>6}"
        f"{_ratio(row['found'], row['found'] + row['fp']):>10}"
        f"{_ratio(row['found'], row['planted']):>7}{row['clean_fp']:>20}"
        f"{(str(row['covered']) + '/' + str(row['stated'])) if row['stated'] else '-':>10}"
    )


def report(selected: list[Novel], verbose: bool) -> None:
    by_split: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    for novel in selected:
        result = accuracy(novel, verbose)
        title = novel.labels.get("title", novel.name)
        total = table(f"{title} [{novel.split}]", result["per_kind"])
        print(
            f"  unmodified text: {result['unmodified_false']} false finding(s) in "
            f"{result['unmodified_kb']:.0f} KB; whole-book check "
            f"{'passes' if result['unmodified_pass'] else 'FAILS'}"
        )
        reasons = sorted({r["reason"] for r in result["unchecked"]})
        print(f"  not checked: {len(result['unchecked'])} fact(s), each with its reason:")
        for reason in reasons:
            count = sum(1 for r in result["unchecked"] if r["reason"] == reason)
            print(f"    {count} x {reason}")
        split = by_split[novel.split]
        for kind, row in result["per_kind"].items():
            into = split.setdefault(kind, dict.fromkeys(total, 0))
            for key in total:
                into[key] += row[key]
        print()
    for split_name in ("dev", "held_out", "blind", "tuned"):
        chosen = [n for n in selected if n.split == split_name]
        if len(chosen) > 1:  # one novel's group is its own table, printed above
            table(f"== all {len(chosen)} {split_name} novels ==", by_split[split_name])
            print()


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
    parser.add_argument("--novel", action="append", help="only this novel (repeatable)")
    parser.add_argument("--verbose", action="store_true", help="list misses and false findings")
    parser.add_argument("--timing", type=Path, help="the whole Gutenberg text (CRLF) for timing")
    ns = parser.parse_args()
    selected = [n for n in novels() if not ns.novel or n.name in ns.novel]
    report(selected, ns.verbose)
    if ns.timing:
        for recipe_id, seconds, size in timing(ns.timing):
            print(f"phase A {recipe_id:<28} {size / 1024:.0f} KB in {seconds:.2f} s")


if __name__ == "__main__":
    main()
