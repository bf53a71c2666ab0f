"""consistency_checker: canon contradictions and misspelled names across many scenes."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, ClassVar

from pydantic import Field

from controlroom.domain.errors import ToolError
from controlroom.tools.analysis import STOPWORDS, edit_distance_at_most_one
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.builtin.canon_checker import canon_digest, check_scenes, load_cards
from controlroom.tools.canon import HONORIFICS
from controlroom.tools.text import read_document
from controlroom.tools.workspace import Workspace

_CAPITALISED = re.compile(r"(?<![\w’'-])[A-Z][a-z]+(?:[’'][a-z]+)?(?![\w-])")
#: A name written differently this often is the writer's choice, not a slip.
MAX_VARIANT_USES = 2


_VOWELS = frozenset("aeiouy")


def likely_typo(found: str, name: str) -> bool:
    """One slip away: two letters swapped ("Kale"), a vowel for a vowel ("Sybil",
    "Hallwerd"), or a letter more or less in a long name. "Hardy" is not "Harry": a
    consonant for a consonant is usually another name."""
    if len(found) == len(name):
        diffs = [i for i in range(len(found)) if found[i] != name[i]]
        swapped = len(diffs) == 2 and found[diffs[0]] == name[diffs[1]]
        if swapped and found[diffs[1]] == name[diffs[0]]:
            return True  # "Sybil" for "Sibyl"
    if not edit_distance_at_most_one(found, name):
        return False
    if len(found) != len(name):
        return min(len(found), len(name)) >= 5
    diffs = [i for i in range(len(found)) if found[i] != name[i]]
    if len(diffs) == 2:
        return True
    a, b = found[diffs[0]].lower(), name[diffs[0]].lower()
    return a in _VOWELS and b in _VOWELS


class ConsistencyCheckerArgs(ToolArgs):
    scene_paths: list[str]
    canon_paths: list[str] = Field(default_factory=list)


def name_variants(workspace: Workspace, paths: list[str], known: set[str]) -> list[dict[str, Any]]:
    """Capitalised words one letter away from a name on a card ("Kale" for "Kael"), used
    mid-sentence, at most twice, never in lower case, sharing the name's first letter
    ("Ford" is not "Lord"), and not a title or a function word."""
    names = {n for n in known if len(n) >= 4}
    seen: Counter[str] = Counter()
    where: dict[str, list[tuple[str, int, str]]] = {}
    lowercase: set[str] = set()
    for path in paths:
        doc = read_document(workspace.read_text(path))
        for sentence in doc.sentences:
            lowercase.update(w.lower() for w in re.findall(r"\b[a-z]+\b", sentence.text))
            for match in _CAPITALISED.finditer(sentence.text):
                if match.start() == 0 or not sentence.text[: match.start()].strip(" “\"‘'(—"):
                    continue
                word = re.sub(r"[’']s$", "", match.group(0))
                seen[word] += 1
                line = doc.blocks[sentence.block].line_at(sentence.start + match.start())
                where.setdefault(word, []).append((path, line, sentence.text))
    findings = []
    for word, count in sorted(seen.items()):
        lowered = word.lower()
        if (
            word in known
            or count > MAX_VARIANT_USES
            or lowered in lowercase
            or lowered in STOPWORDS
            or lowered.rstrip(".") in HONORIFICS
        ):
            continue
        near = sorted(n for n in names if n[0] == word[0] and likely_typo(word, n))
        for path, line, text in where[word] if near else []:
            findings.append(
                {
                    "type": "name_variant",
                    "path": path,
                    "line": line,
                    "found": word,
                    "expected": near[0],
                    "quote": word,
                    "sentence": text,
                    "message": f"{path}:{line}: '{word}' looks like a misspelling of '{near[0]}'",
                }
            )
    return findings


class ConsistencyChecker:
    name: ClassVar[str] = "consistency_checker"
    #: Reads the workspace: in a worker thread (tools/base.py `Tool`).
    slow: ClassVar[bool] = True
    description: ClassVar[str] = "Find canon contradictions and name variants across scenes"
    args_model: ClassVar[type[ToolArgs]] = ConsistencyCheckerArgs

    def run(self, args: ConsistencyCheckerArgs, workspace: Workspace) -> ToolResult:
        if not args.scene_paths:
            raise ToolError(self.name, "no scene or chapter files to check: nothing was found")
        cards = load_cards(workspace, args.canon_paths)
        report = check_scenes(workspace, cards, args.scene_paths)
        findings: list[dict[str, Any]] = [
            {"type": "canon_conflict", "message": c.describe(), **c.as_dict()}
            for c in report.conflicts
        ]
        known = {t for name in report.cast.owner for t in name.split()} | set(report.cast.owner)
        findings.extend(name_variants(workspace, args.scene_paths, known))
        rows = report.fact_rows()
        output: dict[str, Any] = {
            "scenes_checked": list(args.scene_paths),
            "findings": findings,
            "finding_count": len(findings),
            "facts": rows,
            "unchecked": [r for r in rows if not r["checked"]],
            "pass": not findings,
        }
        variants = [f"! {f['message']}" for f in findings if f["type"] == "name_variant"]
        summary = (
            f"Checked {len(args.scene_paths)} scenes: {len(findings)} finding(s)\n"
            + canon_digest(cards, report)
            + ("\n" + "\n".join(variants) if variants else "")
        )
        return ToolResult(output, summary)
