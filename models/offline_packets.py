"""The offline provider's answers to task packets (the "Write Scene from Outline" playbook):
a receipt and nothing else, its work derived from what the packet gave the agent, as the
pipeline's own offline roles derive theirs (the continuity checks are real canon checks).

As there, `slip=True` (the `contradict_canon` fault) makes a writer or an editor get one canon
detail wrong, and `failing=True` (`verdict_fail`) makes a check or a critique fail."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import partial
from typing import Any

from controlroom.domain.canonical import sha256_text
from controlroom.models import offline_roles as roles
from controlroom.tools.analysis import parse_fact_lines

Inputs = list[tuple[str, str]]
_SCENE = re.compile(r"Focus: Scene (\d+) '(.+)'")


def _inputs(inputs: Inputs) -> dict[str, str]:
    return {name: text for name, text in inputs if name != "task_packet"}


def _receipt(work: str, **account: Any) -> str:
    first = work.strip().splitlines()[0] if work.strip() else "the work"
    excerpt = account.pop("excerpt", f"Produced {first[:80].rstrip('.')}.")
    reply = {
        "output": work,
        "outputs_produced": account.pop("outputs", []),
        "reasoning_summary": account.pop("summary", "Worked from the packet's inputs only."),
        "decisions": account.pop("decisions", []),
        "checks_performed": account.pop("checks", []),
        "assumptions": account.pop("assumptions", []),
        "risks": account.pop("risks", []),
        "next_recommended_action": account.pop("next", "hand off as the packet says"),
        "STOP_HOOK": account.pop("stop", False),
        "citations": account.pop("citations", []),
        "report_excerpt": f"{excerpt} It follows the packet's inputs and constraints.",
    }
    return json.dumps(reply, indent=2, ensure_ascii=False)


def plan_scene(task: str, inputs: Inputs) -> str:
    shown = _inputs(inputs)
    beat_text = shown.get("outline_beat", "")
    focus = _SCENE.search(beat_text)
    title = f"Scene {focus.group(1)}: {focus.group(2)}" if focus else task.strip()
    beats = roles._BEAT.findall(beat_text)
    cast = roles._CAST.search(beat_text)
    lines = [f"# Scene plan: {title}", f"Characters: {cast.group(1) if cast else 'unspecified'}"]
    lines += [f"{i}. {beat}" for i, beat in enumerate(beats, 1)]
    return _receipt(
        "\n".join(lines) + "\n",
        summary=f"Ordered the {len(beats)} outline beat(s) of {title} into a plan.",
        decisions=[f"keep the outline's order of {len(beats)} beat(s)"],
        checks=["every outline beat appears once in the plan"],
        citations=sorted(shown),
        next="check the plan against canon",
        excerpt=f"Planned {title} in {len(beats)} beat(s).",
    )


def continuity_check(task: str, inputs: Inputs, *, failing: bool = False) -> str:
    shown = _inputs(inputs)
    checked = [(n, t) for n, t in shown.items() if n != "canon_context"]
    canon = [("canon_context", shown["canon_context"])] if "canon_context" in shown else []
    report = json.loads(roles.check_continuity(task, [*checked[-1:], *canon]))
    if failing:
        report = roles.failing_continuity(report, [*checked[-1:], *canon])
    subject = checked[-1][0] if checked else "nothing"
    conflicts = report["conflicts"]
    lines = [f"Continuity: {'pass' if report['pass'] else 'FAIL'} "
             f"({report['facts_checked']} canon fact(s) checked)"]  # fmt: skip
    lines += [
        f"- {c['entity']} {c['attribute']}: canon '{c['canon_value']}', found '{c['found']}'"
        for c in conflicts
    ]
    return _receipt(
        "\n".join(lines) + "\n",
        summary="Checked the text against the canon facts it was given.",
        checks=[f"{report['facts_checked']} canon fact(s) against {subject}"],
        risks=[line[2:] for line in lines[1:]],
        citations=sorted(shown),
        next="write the beats" if report["pass"] else "fix the conflicts before going on",
        excerpt=f"Continuity {'passes' if report['pass'] else 'fails'} with "
        f"{len(conflicts)} conflict(s).",
    )


#: The eye colour a careless writer shown no canon gives a character: one no card of the
#: example novel gives anyone, so there it contradicts every card that names eyes.
BLIND_SLIP = "{n}'s violet eyes caught the thin light."


def write_beat(task: str, inputs: Inputs, *, slip: bool = False) -> str:
    shown = _inputs(inputs)
    beat = shown.get("item", task).strip()
    plan = shown.get("scene_plan", "")
    cast_line = roles._CAST.search(plan)
    cast = [c.strip() for c in cast_line.group(1).split(",")] if cast_line else []
    names = {c for c in cast if c and c != "unspecified"}
    sentence = roles._past_tense(beat, names)
    subject = next((c for c in cast if c in beat), cast[0] if cast else "No one")
    line = roles._LINES[int(sha256_text(beat)[:8], 16) % len(roles._LINES)]
    prose = f"{sentence} {line.format(n=subject)}"
    if slip:  # against the canon it was shown, if any; else a colour no card gives
        facts = parse_fact_lines("\n".join(shown.values()))
        wrong = roles.slip_sentence(subject, facts) or BLIND_SLIP.format(n=subject)
        prose = f"{sentence} {wrong} {line.format(n=subject)}"
    return _receipt(
        prose + "\n",
        summary=f"Wrote beat {shown.get('item_index', '')} from the plan.".replace("  ", " "),
        decisions=["past tense, close third person"],
        checks=["only characters named in the plan appear"],
        citations=["item", "scene_plan"],
        next="write the next beat, or critique the scene",
        excerpt=f"Wrote the beat '{beat[:60]}'.",
    )


def critique_scene(task: str, inputs: Inputs, *, failing: bool = False) -> str:
    shown = _inputs(inputs)
    draft = shown.get("scene_draft", next(iter(shown.values()), ""))
    verdict = json.loads(roles.evaluate_reader_experience(task, [("draft", draft)]))
    if failing:
        verdict = roles.failing_verdict(verdict)
    work = (
        f"Verdict: {verdict['verdict']} ({verdict['score']}/10)\n"
        + "".join(f"+ {s}\n" for s in verdict["strengths"])
        + "".join(f"- {p}\n" for p in verdict["problems"])
        + f"Suggestion: {verdict['suggestion']}\n"
    )
    return _receipt(
        work,
        summary="Read the drafted scene as a reader would.",
        decisions=[f"verdict {verdict['verdict']}"],
        checks=["pacing", "dialogue share", "the ending's pull"],
        risks=list(verdict["problems"]),
        citations=["scene_draft"],
        next="edit the scene with the suggestion",
        excerpt=f"The scene scores {verdict['score']}/10.",
    )


def edit_scene(task: str, inputs: Inputs, *, slip: bool = False) -> str:
    shown = _inputs(inputs)
    draft = shown.get("scene_draft", "")
    plan = shown.get("scene_plan", "")
    heading = re.search(r"# Scene plan: (.+)", plan)
    edited = roles.polish_draft(task, [("draft", draft)], slip=slip)
    if heading and not edited.lstrip().startswith("#"):
        edited = f"# {heading.group(1)}\n\n{edited}"
    return _receipt(
        edited,
        summary="Tightened the prose: filler words, doubled words, spacing, capitals.",
        decisions=["no change to events or names"],
        checks=["every beat still present"],
        citations=["scene_draft", "critique"],
        next="final continuity check",
        excerpt="Edited the scene for the line-level problems.",
    )


#: The writer and the editor, with one canon detail wrong (`contradict_canon`).
SLIPS: dict[str, Callable[[str, Inputs], str]] = {
    "write_beat": partial(write_beat, slip=True),
    "edit_scene": partial(edit_scene, slip=True),
}
#: The check and the critique, failing (`verdict_fail`).
FAILING: dict[str, Callable[[str, Inputs], str]] = {
    "continuity_check": partial(continuity_check, failing=True),
    "critique_scene": partial(critique_scene, failing=True),
}

HANDLERS = {
    "plan_scene": plan_scene,
    "continuity_check": continuity_check,
    "write_beat": write_beat,
    "critique_scene": critique_scene,
    "edit_scene": edit_scene,
}
