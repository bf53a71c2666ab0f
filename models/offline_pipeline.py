"""The offline model's answers in a pipeline's iteration: the revision brief (what this
iteration resolves, with what the last one left) and the gap analysis (what is still open).
Deterministic, from what it is shown: findings are the `!` lines of the phase A summary."""

from __future__ import annotations

import json
import re
from typing import Any

Inputs = list[tuple[str, str]]

_LOCATION = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+): ")


def _shown(inputs: Inputs, name: str) -> str:
    return next((text for key, text in inputs if key == name), "")


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _findings(inputs: Inputs) -> list[str]:
    text = "\n".join(t for _, t in inputs)
    return [line.strip()[2:].strip() for line in text.splitlines() if line.strip().startswith("! ")]


def _carried(previous: dict[str, Any] | None) -> list[str]:
    if not previous:
        return []
    lines = [f"Iteration {previous.get('number')} ended {previous.get('result')}."]
    for item in previous.get("deferred") or []:
        lines.append(
            f"Deferred then, to take up now: {item.get('step_id')} — {item.get('reason')}"
            + (f" (note: {item.get('note')})" if item.get("note") else "")
        )
    for item in previous.get("relaxed") or []:
        lines.append(
            f"Relaxed then, to restore if possible: {item.get('constraint')} "
            f"({item.get('relaxation')})"
        )
    gap = str(previous.get("gap_analysis") or "")
    open_items = [ln.strip()[2:] for ln in gap.splitlines() if ln.strip().startswith("- ")]
    lines += [f"Still open after it: {item}" for item in open_items[:8]]
    return lines


def revision_brief(task: str, inputs: Inputs) -> str:
    context = _json(_shown(inputs, "iteration"))
    number = context.get("iteration", 1)
    findings = _findings(inputs)
    out = [f"# Revision brief — iteration {number}", "", "## Resolve in this iteration"]
    out += [f"- {f}" for f in findings] or ["- No finding of the consistency check is open."]
    carried = _carried(context.get("previous"))
    out += ["", "## Carried over"]
    out += [f"- {line}" for line in carried] or ["- Nothing: this is the first iteration."]
    return "\n".join(out) + "\n"


def gap_analysis(task: str, inputs: Inputs) -> str:
    record = _json(_shown(inputs, "iteration_record"))
    corrections = _shown(inputs, "corrections")
    findings = _findings(inputs)
    addressed: list[str] = []
    open_: list[str] = []
    for finding in findings:
        match = _LOCATION.match(finding)
        where = (
            {f"{match['path']}:{match['line']}", f"{match['path']} line {match['line']}"}
            if match
            else {finding[:60]}
        )
        (addressed if any(w in corrections for w in where) else open_).append(finding)
    number = record.get("iteration", 1)
    out = [f"# Gap analysis — iteration {number}", ""]
    out.append(f"Addressed: {len(addressed)} of {len(findings)} finding(s) have a correction.")
    out += ["", "## Still open"]
    out += [f"- {f}" for f in open_]
    for item in record.get("deferred") or []:
        out.append(f"- deferred step {item.get('step_id')}: {item.get('reason')}")
    for item in record.get("relaxed") or []:
        out.append(f"- relaxed: {item.get('constraint')} ({item.get('relaxation')})")
    if out[-1] == "## Still open":
        out.append("(nothing)")
    out += ["", "## For the next iteration"]
    if addressed:
        out.append("Apply the corrections to the manuscript, then run the pass again to confirm.")
    if open_ or record.get("deferred"):
        out.append("Take up what is still open first.")
    if not addressed and not open_:
        out.append("The check found nothing: run the pass again after the next draft.")
    return "\n".join(out) + "\n"


HANDLERS = {"revision_brief": revision_brief, "gap_analysis": gap_analysis}
