"""scene_draft_validator: structural checks of one scene against its outline beats."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import Field

from controlroom.tools.analysis import numbers_in, paragraphs, terms, title_of, words
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.builtin.outline_analyzer import parse_outline
from controlroom.tools.workspace import Workspace

_FIRST_PERSON = re.compile(r"\b(I|me|my|mine)\b")
_THIRD_PERSON = re.compile(r"\b(he|she|his|her|they|their)\b", re.IGNORECASE)
_QUOTES = re.compile(r"[\"“][^\"”]*[\"”]")


def _stem(word: str) -> str:
    return re.sub(r"(?:'s|’s|ing|ed|es|s)$", "", word) or word


class SceneDraftValidatorArgs(ToolArgs):
    scene_path: str
    outline_path: str | None = None
    min_words: int = Field(default=150, ge=1)


class SceneDraftValidator:
    name: ClassVar[str] = "scene_draft_validator"
    #: Reads the workspace: in a worker thread (tools/base.py `Tool`).
    slow: ClassVar[bool] = True
    description: ClassVar[str] = "Validate a scene: title, length, POV, dialogue, outline beats"
    args_model: ClassVar[type[ToolArgs]] = SceneDraftValidatorArgs

    def run(self, args: SceneDraftValidatorArgs, workspace: Workspace) -> ToolResult:
        text = workspace.read_text(args.scene_path)
        title = title_of(text)
        narration = _QUOTES.sub(" ", text)
        first = len(_FIRST_PERSON.findall(narration))
        third = len(_THIRD_PERSON.findall(narration))
        word_count = len(words(text))
        checks: list[dict[str, Any]] = [
            {
                "name": "has_title",
                "passed": title is not None,
                "detail": f"title '{title}'" if title else "no heading",
            },
            {
                "name": "min_length",
                "passed": word_count >= args.min_words,
                "detail": f"{word_count} words (minimum {args.min_words})",
            },
            {
                "name": "consistent_pov",
                "passed": min(first, third) <= max(first, third) * 0.2,
                "detail": f"first-person {first}, third-person {third} outside dialogue",
            },
            {
                "name": "balanced_quotes",
                "passed": text.count('"') % 2 == 0,
                "detail": f"{text.count(chr(34))} straight quote marks",
            },
        ]
        beats_report: list[dict[str, Any]] = []
        if args.outline_path:
            scenes = parse_outline(workspace.read_text(args.outline_path))
            numbers = set(numbers_in(f"{title or ''} {args.scene_path}"))
            scene = next((s for s in scenes if s["number"] in numbers), None)
            scene_terms = {_stem(t) for t in terms(text)}
            for beat in scene["beats"] if scene else []:
                beat_terms = {_stem(t) for t in terms(beat)}
                covered = sorted(beat_terms & scene_terms)
                # One shared word ("Kael") is not a beat: two, or all of a short beat's.
                enough = len(covered) >= min(2, len(beat_terms))
                beats_report.append(
                    {"beat": beat, "covered": bool(covered) and enough, "shared_terms": covered}
                )
            missing = [b["beat"] for b in beats_report if not b["covered"]]
            checks.append(
                {
                    "name": "covers_outline_beats",
                    "passed": scene is not None and not missing,
                    "detail": (
                        "no outline scene matches this file"
                        if scene is None
                        else f"{len(beats_report) - len(missing)}/{len(beats_report)} beats covered"
                        + (f"; missing: {'; '.join(str(m) for m in missing)}" if missing else "")
                    ),
                }
            )
        last = paragraphs(text)[-1] if paragraphs(text) else ""
        checks.append(
            {
                "name": "ends_with_hook",
                "severity": "warning",
                "passed": bool(re.search(r"[?…—]|\.\.\.", last[-80:])),
                "detail": "last lines: " + last[-80:],
            }
        )
        # A missing hook is a matter of taste: it warns but does not fail the scene.
        passed = all(bool(c["passed"]) for c in checks if c.get("severity") != "warning")
        output: dict[str, Any] = {
            "scene_path": args.scene_path,
            "checks": checks,
            "beats": beats_report,
            "pass": passed,
        }
        lines = [
            f"{args.scene_path}: {sum(bool(c['passed']) for c in checks)}/{len(checks)} checks pass"
        ]
        lines.extend(
            f"- {'ok' if c['passed'] else 'WARN' if c.get('severity') == 'warning' else 'FAIL'}"
            f" {c['name']}: {c['detail']}"
            for c in checks
        )
        return ToolResult(output, "\n".join(lines))
