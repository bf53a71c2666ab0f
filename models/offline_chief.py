"""The offline Chief: a deterministic decomposition of an intent, and a deterministic review.

Derived from the intent's own words, as a careful Chief would read them: clauses become
tasks ("write scene 4, then check consistency of scenes 3-4"), drafting several scenes
becomes one task per scene, a check of a scene waits for the task that writes it, "then"
makes a task wait for the one before, and an audit with no scope gets a scoping question.
The engine then checks every task with the router and the workspace, as it does a real
model's plan.
"""

from __future__ import annotations

import json
import re
from typing import Any

from controlroom.domain.router import initial_args_from

Inputs = list[tuple[str, str]]

_SPLIT = re.compile(
    r"\s*(?:;|\.\s+|\.$|,?\s+and\s+then\s+|,?\s+then\s+|,\s*after that\s*,?\s*"
    r"|,\s*and\s+|,\s+(?=(?:write|draft|check|validate|review|audit|update|restructure|"
    r"proofread|run|do)\b)|\s+and\s+(?=(?:write|draft|check|validate|review|audit|update|"
    r"restructure|proofread|run|do)\b))",
    re.IGNORECASE,
)
_THEN = re.compile(r"\b(?:then|after that|afterwards|once)\b", re.IGNORECASE)
_CREATIVE = re.compile(r"\b(?:write|draft)\b", re.IGNORECASE)
_AUDIT = re.compile(r"\b(?:audit|review|foreshadow\w*|pacing)\b", re.IGNORECASE)
_DOD = [
    (re.compile(r"\b(?:write|draft)\b", re.I), "Scene file exists, continuity pass"),
    (
        re.compile(r"consisten|continuity|canon check", re.I),
        "Continuity report, issues created for findings",
    ),
    (re.compile(r"validat|beats?", re.I), "Scene covers its outline beats"),
    (re.compile(r"foreshadow", re.I), "Foreshadowing report with setups and payoffs"),
    (re.compile(r"prose|pacing|proofread", re.I), "Prose review with a verdict"),
    (re.compile(r"canon", re.I), "Canon cards updated"),
]
_NUMBERED = re.compile(r"\b(scenes?|chapters?)\s+#?(\d+)(?:\s*(?:-|–|to|and)\s*#?(\d+))?", re.I)


def _clauses(intent: str) -> list[tuple[str, bool]]:
    """(clause, follows the one before) pairs, in order."""
    parts: list[tuple[str, bool]] = []
    position = 0
    for found in _SPLIT.finditer(intent):
        text = intent[position : found.start()].strip(" ,")
        if text:
            parts.append((text, False))
        position = found.end()
        if _THEN.search(found.group(0)) and parts:
            parts.append(("", True))  # marks: the next clause follows the previous one
    tail = intent[position:].strip(" ,.")
    if tail:
        parts.append((tail, False))
    merged: list[tuple[str, bool]] = []
    follows = False
    for text, marker in parts:
        if marker:
            follows = True
            continue
        merged.append((text, follows))
        follows = False
    return merged


def _scenes(text: str) -> list[int]:
    args = initial_args_from(text)
    numbers = args.get("scene_numbers") or args.get("chapter_numbers")
    if isinstance(numbers, list):
        return [int(n) for n in numbers if isinstance(n, int)]
    single = args.get("scene_number", args.get("chapter_number"))
    return [single] if isinstance(single, int) else []


def _sentence(text: str) -> str:
    text = re.sub(r"^(?:and|also|please|let's|lets|then)\s+", "", text.strip(), flags=re.I)
    return text[:1].upper() + text[1:]


def _dod(text: str) -> str:
    for pattern, dod in _DOD:
        if pattern.search(text):
            return dod
    return "The recipe's Definition of Done passes"


def decompose_intent(task: str, inputs: Inputs) -> str:
    tasks: list[dict[str, Any]] = []
    writes: dict[int, int] = {}  # scene number -> the task writing it
    previous: list[int] = []
    verb = ""
    for clause, follows in _clauses(task):
        if verb and re.match(r"(?:the\s+)?(?:scenes?|chapters?)\b", clause, re.I):
            clause = f"{verb} {clause}"  # "write scene 21, then scene 22"
        found = re.match(r"\W*(\w+)", _sentence(clause))
        verb = found.group(1) if found else ""
        scenes = _scenes(clause)
        made: list[int] = []
        if _CREATIVE.search(clause) and len(scenes) > 1:
            verb = "Draft" if re.search(r"\bdraft", clause, re.I) else "Write"
            units = [(f"{verb} scene {n}", [n]) for n in scenes]
        else:
            units = [(_sentence(clause), scenes)]
        for description, scope in units:
            task_id = len(tasks) + 1
            deps = set(previous) if follows else set()
            if _CREATIVE.search(description):
                # Scenes are drafted in order: the next scene reads the one before it.
                deps |= {writes[n - 1] for n in scope if n - 1 in writes}
                for n in scope:
                    writes[n] = task_id
            else:
                deps |= {writes[n] for n in scope if n in writes}
            question = None
            if (
                _AUDIT.search(description)
                and not scope
                and not re.search(r"manuscript|whole|all scenes|book", description, re.I)
            ):
                question = "Which scenes should it cover, and what should it look for?"
            tasks.append(
                {
                    "id": task_id,
                    "description": description,
                    "deps": sorted(deps),
                    "dod": _dod(description),
                    "scoping_question": question,
                }
            )
            made.append(task_id)
        previous = made
    if not tasks:
        tasks.append(
            {
                "id": 1,
                "description": _sentence(task) or "Unclear request",
                "deps": [],
                "dod": "The recipe's Definition of Done passes",
                "scoping_question": "What should be done, and on which scenes?",
            }
        )
    summary = f"{len(tasks)} task(s) from the intent; deps follow scene order and 'then'."
    return json.dumps({"tasks": tasks, "summary": summary}, indent=2)


def review_task(task: str, inputs: Inputs) -> str:
    shown = dict(inputs)
    result = shown.get("result", "")
    passed = "DoD: passed" in result
    issues = re.search(r"Issues opened: (\d+)", result)
    count = int(issues.group(1)) if issues else 0
    if passed:
        notes = (
            f"The run finished and every DoD check passed ({shown.get('dod', '').strip()}). "
            "Accepting the task."
        )
        return json.dumps({"decision": "accept", "notes": notes})
    notes = (
        f"The DoD is not met: {count} issue(s) were opened. "
        "Read them with `controlroom issues`, then retry the run or edit the plan."
    )
    return json.dumps({"decision": "follow_up", "notes": notes})


HANDLERS = {"decompose_intent": decompose_intent, "review_task": review_task}
