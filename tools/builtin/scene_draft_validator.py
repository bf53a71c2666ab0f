"""scene_draft_validator: structural checks of scenes or chapters against their outline beats.

Every unit the request names is validated and reported ("chapters 1-12": twelve reports).
Point of view is judged against the book's own: a first-person novel's chapters are
expected to say "I" outside dialogue, a third-person novel's not to.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import Field

from controlroom.domain.errors import WorkspaceError
from controlroom.tools.analysis import numbers_in, paragraphs, terms, title_of, words
from controlroom.tools.base import ToolArgs, ToolResult
from controlroom.tools.layout import detect_layout
from controlroom.tools.outline import parse_outline
from controlroom.tools.stopping import checkpoint
from controlroom.tools.workspace import Workspace

_FIRST_PERSON = re.compile(r"\b(I|me|my|mine|myself)\b")
_THIRD_PERSON = re.compile(r"\b(he|she|his|her|him|they|their|them)\b", re.IGNORECASE)
_QUOTES = re.compile(r"[\"“][^\"”]*[\"”]")
#: First-person narration says "I", "me" or "my" outside dialogue at least this often (per
#: word of narration); a third-person chapter quoting a letter stays well under it.
_FIRST_PERSON_RATE = 0.01
#: How many of the book's units are read to learn its point of view.
_POV_SAMPLE = 12

PointOfView = Literal["first", "third"]


def _stem(word: str) -> str:
    return re.sub(r"(?:'s|’s|ing|ed|es|s)$", "", word) or word


class SceneDraftValidatorArgs(ToolArgs):
    scene_path: str | None = None
    #: Every unit to validate (a range, the manuscript); `scene_path` when empty.
    scene_paths: list[str] = Field(default_factory=list)
    outline_path: str | None = None
    min_words: int = Field(default=150, ge=1)


def point_of_view(text: str) -> tuple[PointOfView, int, int]:
    """(the narration's point of view, first-person and third-person pronouns outside
    dialogue)."""
    narration = _QUOTES.sub(" ", text)
    first = len(_FIRST_PERSON.findall(narration))
    third = len(_THIRD_PERSON.findall(narration))
    rate = first / max(1, len(words(narration)))
    return ("first" if rate >= _FIRST_PERSON_RATE else "third"), first, third


def book_point_of_view(workspace: Workspace, paths: list[str]) -> tuple[PointOfView | None, str]:
    """The point of view most of the book's units are narrated in (None when the book has
    no units to read), and how many of the sample agree."""
    try:
        units = [u.path for u in detect_layout(workspace).units] or paths
    except WorkspaceError:
        units = paths
    step = max(1, len(units) // _POV_SAMPLE)
    sample = units[::step][:_POV_SAMPLE]
    if not sample:
        return None, "no units to compare"
    views = [point_of_view(workspace.read_text(path))[0] for path in sample]
    first = views.count("first")
    book: PointOfView = "first" if first * 2 > len(views) else "third"
    return book, f"{views.count(book)} of {len(views)} units sampled are {book}-person"


class SceneDraftValidator:
    name: ClassVar[str] = "scene_draft_validator"
    #: Reads the workspace: in a worker thread (tools/base.py `Tool`).
    slow: ClassVar[bool] = True
    description: ClassVar[str] = "Validate scenes: title, length, POV, dialogue, outline beats"
    args_model: ClassVar[type[ToolArgs]] = SceneDraftValidatorArgs

    def run(self, args: SceneDraftValidatorArgs, workspace: Workspace) -> ToolResult:
        paths = list(dict.fromkeys(args.scene_paths)) or (
            [args.scene_path] if args.scene_path else []
        )
        if not paths:
            raise WorkspaceError("no scene or chapter to validate")
        outline = (
            parse_outline(workspace.read_text(args.outline_path)) if args.outline_path else None
        )
        book_view, book_detail = book_point_of_view(workspace, paths)
        units = []
        for path in paths:
            checkpoint()
            units.append(
                _validate(workspace, path, args.min_words, outline, book_view, book_detail)
            )
        if len(units) == 1:
            output = dict(units[0])
        else:
            output = {
                "scene_path": paths[0],
                "checks": [
                    {
                        "name": unit["scene_path"],
                        "passed": unit["pass"],
                        "detail": _failed(unit) or "every check passes",
                    }
                    for unit in units
                ],
                "beats": [b for unit in units for b in unit["beats"]],
                "pass": all(unit["pass"] for unit in units),
            }
        output["units"] = units
        output["point_of_view"] = book_view
        lines = []
        for unit in units:
            checks = unit["checks"]
            lines.append(
                f"{unit['scene_path']}: {sum(bool(c['passed']) for c in checks)}/{len(checks)} "
                "checks pass"
            )
            lines.extend(
                f"- {'ok' if c['passed'] else 'WARN' if c.get('severity') == 'warning' else 'FAIL'}"
                f" {c['name']}: {c['detail']}"
                for c in checks
            )
        if len(units) > 1:
            passed = sum(bool(unit["pass"]) for unit in units)
            lines.insert(0, f"{passed}/{len(units)} units pass")
        return ToolResult(output, "\n".join(lines))


def _failed(unit: dict[str, Any]) -> str:
    return "; ".join(
        f"{c['name']}: {c['detail']}"
        for c in unit["checks"]
        if not c["passed"] and c.get("severity") != "warning"
    )


def _validate(
    workspace: Workspace,
    path: str,
    min_words: int,
    outline: list[dict[str, Any]] | None,
    book_view: PointOfView | None,
    book_detail: str,
) -> dict[str, Any]:
    text = workspace.read_text(path)
    title = title_of(text)
    view, first, third = point_of_view(text)
    word_count = len(words(text))
    checks: list[dict[str, Any]] = [
        {
            "name": "has_title",
            "passed": title is not None,
            "detail": f"title '{title}'" if title else "no heading",
        },
        {
            "name": "min_length",
            "passed": word_count >= min_words,
            "detail": f"{word_count} words (minimum {min_words})",
        },
        {
            "name": "consistent_pov",
            "passed": book_view is None or view == book_view,
            "detail": (
                f"{view}-person narration (first-person {first}, third-person {third} "
                f"outside dialogue); the book: {book_detail}"
            ),
        },
        {
            "name": "balanced_quotes",
            "passed": text.count('"') % 2 == 0,
            "detail": f"{text.count(chr(34))} straight quote marks",
        },
    ]
    beats_report: list[dict[str, Any]] = []
    if outline is not None:
        numbers = set(numbers_in(f"{title or ''} {path}"))
        scene = next((s for s in outline if s["number"] in numbers), None)
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
    return {"scene_path": path, "checks": checks, "beats": beats_report, "pass": passed}
