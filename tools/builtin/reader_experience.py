"""reader_experience_simulator: a first-time reader's tension and confusion, scene by scene."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any, ClassVar

from controlroom.tools.analysis import (
    dialogue_ratio,
    name_set,
    proper_nouns,
    sentences,
    stake_cues_in,
    words,
)
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.builtin.stakes_mapper import is_thread_term
from controlroom.tools.workspace import Workspace

WORDS_PER_MINUTE = 230
CONFUSING_NEW_NAMES = 5


class ReaderExperienceArgs(ToolArgs):
    paths: list[str]


class ReaderExperienceSimulator:
    name: ClassVar[str] = "reader_experience_simulator"
    #: Reads the workspace: in a worker thread (tools/base.py `Tool`).
    slow: ClassVar[bool] = True
    description: ClassVar[str] = "Simulate a reader: tension curve, new names, reading time"
    args_model: ClassVar[type[ToolArgs]] = ReaderExperienceArgs

    def run(self, args: ReaderExperienceArgs, workspace: Workspace) -> ToolResult:
        known: set[str] = set()
        lowercase = {
            w for path in args.paths for w in re.findall(r"\b[a-z]+\b", workspace.read_text(path))
        }
        # Names a reader must learn: not "I'll", "English" or "Perhaps" (see stakes_mapper).
        all_names = {
            n
            for n in name_set(workspace.read_text(path) for path in args.paths)
            if is_thread_term(n, lowercase)
        }
        curve: list[dict[str, Any]] = []
        for path in args.paths:
            text = workspace.read_text(path)
            ss = sentences(text)
            n = len(ss) or 1
            stake_density = sum(bool(stake_cues_in(s)) for _, s in ss) / n
            questions = sum(s.endswith("?") for _, s in ss) / n
            short = sum(len(words(s)) <= 8 for _, s in ss) / n
            # Weights: stakes drive tension most; questions, clipped sentences and talk add.
            raw = 2.0 * stake_density + 1.0 * questions + 0.6 * short + 0.6 * dialogue_ratio(text)
            tension = round(min(10.0, 10 * raw), 1)
            names = set(proper_nouns(text, all_names))
            new_names = sorted(names - known)
            known |= names
            curve.append(
                {
                    "path": path,
                    "tension": tension,
                    "new_names": new_names,
                    "confusing": len(new_names) > CONFUSING_NEW_NAMES,
                    "reading_minutes": round(len(words(text)) / WORDS_PER_MINUTE, 1),
                }
            )
        drops = [
            f"tension drops from {a['tension']} to {b['tension']} entering {b['path']}"
            for a, b in pairwise(curve)
            if float(str(a["tension"])) - float(str(b["tension"])) >= 2.0
        ]
        output: dict[str, Any] = {
            "curve": curve,
            "drops": list(drops),
            "confusing_scenes": [c["path"] for c in curve if c["confusing"]],
        }
        lines = [f"Reader pass over {len(curve)} scene(s)"]
        lines.extend(
            f"- {c['path']}: tension {c['tension']}/10, {len(c['new_names'])} new names,"
            f" {c['reading_minutes']} min"
            for c in curve
        )
        lines.extend(f"! {d}" for d in drops)
        return ToolResult(output, "\n".join(lines))
