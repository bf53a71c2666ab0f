"""consistency_checker: canon contradictions and misspelled names across many scenes."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from controlroom.tools.analysis import edit_distance_at_most_one, proper_nouns, sentences
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.builtin.canon_checker import canon_digest, check_scenes, load_cards
from controlroom.tools.workspace import Workspace


class ConsistencyCheckerArgs(ToolArgs):
    scene_paths: list[str]
    canon_paths: list[str] = Field(default_factory=list)


class ConsistencyChecker:
    name: ClassVar[str] = "consistency_checker"
    description: ClassVar[str] = "Find canon contradictions and name variants across scenes"
    args_model: ClassVar[type[ToolArgs]] = ConsistencyCheckerArgs

    def run(self, args: ConsistencyCheckerArgs, workspace: Workspace) -> ToolResult:
        cards = load_cards(workspace, args.canon_paths)
        conflicts, _ = check_scenes(workspace, cards, args.scene_paths)
        findings: list[dict[str, Any]] = [
            {"type": "canon_conflict", "message": c.describe(), **c.as_dict()} for c in conflicts
        ]
        known = {name for card in cards for name in card.names}
        for path in args.scene_paths:
            text = workspace.read_text(path)
            for variant in sorted(set(proper_nouns(text)) - known):
                near = sorted(n for n in known if edit_distance_at_most_one(variant, n))
                if near:
                    line = next((n for n, s in sentences(text) if variant in s), 0)
                    findings.append(
                        {
                            "type": "name_variant",
                            "path": path,
                            "line": line,
                            "found": variant,
                            "expected": near[0],
                            "message": f"{path}:{line}: '{variant}' looks like a misspelling of "
                            f"'{near[0]}'",
                        }
                    )
        output: dict[str, Any] = {
            "scenes_checked": list(args.scene_paths),
            "findings": findings,
            "finding_count": len(findings),
            "pass": not findings,
        }
        digest = canon_digest(cards, conflicts)
        variants = [f"! {f['message']}" for f in findings if f["type"] == "name_variant"]
        summary = (
            f"Checked {len(args.scene_paths)} scenes: {len(findings)} finding(s)\n"
            + digest
            + ("\n" + "\n".join(variants) if variants else "")
        )
        return ToolResult(output, summary)
