"""The offline model's answers on an escalation ladder's rungs (consult, synthesis, triage).

Deterministic and derived from what it is shown: the consult names the failures' kinds and
what they ask of the next attempt; the synthesis keeps the answers' shared points; the
triage relaxes a length limit for a reply cut at its token limit, defers a step a review
gate still rejects after its rollbacks (the next iteration takes it up), and otherwise
BLOCKs: the offline model cannot judge other failures, so a person decides.
"""

from __future__ import annotations

import json
import re

Inputs = list[tuple[str, str]]


def _shown(inputs: Inputs, name: str) -> str:
    return next((text for key, text in inputs if key == name), "")


def _advice(failures: str) -> list[str]:
    advice = []
    if re.search(r"server_error|HTTP 5\d\d|connection|timeout", failures):
        advice.append("The model server failed, not the approach: send the same work, unchanged.")
    if re.search(r"contract|STOP_HOOK|schema|\$\.", failures):
        advice.append(
            "Reply with exactly the JSON object the contract asks for: no prose around it, "
            "every required field, the stated types."
        )
    if "token limit" in failures:
        advice.append("Write less: keep to the brief's beats and cut description.")
    if "review_feedback" in failures or "gate" in failures:
        advice.append(
            "Mend each finding the reviewer named, exactly where it was found, and change "
            "nothing else."
        )
    return advice or ["Follow the step's inputs literally and name nothing they do not name."]


def ladder_consult(task: str, inputs: Inputs) -> str:
    return " ".join(_advice(_shown(inputs, "failures")))


def ladder_synthesize(task: str, inputs: Inputs) -> str:
    answers = _shown(inputs, "answers")
    points: list[str] = []
    for line in re.split(r"(?<=[.!?])\s+", answers):
        line = line.strip()
        if line and not line.startswith("###") and line not in points:
            points.append(line)
    return "\n".join(f"- {p}" for p in points[:8]) or "- " + " ".join(_advice(""))


def ladder_triage(task: str, inputs: Inputs) -> str:
    failures = _shown(inputs, "failures")
    if "token limit" in failures:
        decision = {
            "decision": "RELAX",
            "confidence": 0.8,
            "reason": "the reply was cut at its token limit: a shorter reply meets the step",
            "constraint": "the reply's length",
            "relaxation": "answer in at most half the length; keep every beat, cut description",
        }
    elif "review_feedback" in failures or "review gate" in failures:
        decision = {
            "decision": "DEFER",
            "confidence": 0.75,
            "reason": "the review gate's findings are still not met after its rollbacks and "
            "the stronger models",
            "note": "take up the gate's findings first in the next iteration",
        }
    else:
        decision = {
            "decision": "BLOCK",
            "confidence": 0.9,
            "reason": "the offline model cannot judge whether this step may be relaxed or "
            "set aside: a person should decide",
        }
    return json.dumps(decision, indent=2)


HANDLERS = {
    "ladder_consult": ladder_consult,
    "ladder_synthesize": ladder_synthesize,
    "ladder_triage": ladder_triage,
}
