"""The offline provider's T1 micro-calls: triage and evidence, derived from the inputs.

Triage focuses on the first input with text (naming it, never quoting it, so the finding
call is shown nothing it was not already shown) or abstains when every input is empty.
Evidence quotes, word for word, the line of an input that shares the most words with the
finding: a citation a reviewer can check, and that fails the check when it should.
"""

from __future__ import annotations

import re

Inputs = list[tuple[str, str]]

#: Slots of the micro-call's own making, not inputs of the step.
_OWN = {"step_purpose", "finding"}
_WORD = re.compile(r"[A-Za-z']+")


def _step_inputs(inputs: Inputs) -> list[tuple[str, str]]:
    return [(name, text) for name, text in inputs if name not in _OWN]


def triage(task: str, inputs: Inputs) -> str:
    for name, text in _step_inputs(inputs):
        lines = [line for line in text.splitlines() if line.strip()]
        if lines:
            return f"FOCUS: what {name} says ({len(lines)} lines), point by point (from {name})"
    if task.strip():
        return "FOCUS: the task as written, since the step was given no inputs (from task)"
    return "ABSTAIN: every input of this step is empty and the task is blank"


def evidence(task: str, inputs: Inputs) -> str:
    finding = dict(inputs).get("finding", "")
    wanted = {w.lower() for w in _WORD.findall(finding)}
    best: tuple[int, str, str] | None = None
    for name, text in [*_step_inputs(inputs), ("task", task)]:
        for line in text.splitlines():
            words = line.split()
            if len(words) < 4:
                continue
            passage = " ".join(words[:20]).replace('"', "'")
            if passage not in " ".join(line.split()):
                continue  # a quote that would need rewriting is no quote
            score = len(wanted & {w.lower() for w in _WORD.findall(passage)})
            if best is None or score > best[0]:
                best = (score, name, passage)
    if best is None:
        return f'Evidence: slot: task "{task.strip()[:120]}"'
    return f'Evidence: slot: {best[1]} "{best[2]}"'


HANDLERS = {"step_triage": triage, "step_evidence": evidence}
