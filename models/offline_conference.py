"""The offline provider in a conference round: a deterministic Chief choosing tools from the
question and the receipts so far, and roles whose replies are grounded in what the evidence
really shows (a receipt's id, a passage a tool quoted from a file), or ABSTAIN."""

from __future__ import annotations

import json
import re
from typing import Any

Inputs = list[tuple[str, str]]
_RECEIPT = re.compile(r"\[receipt_id: (rcpt_[A-Za-z0-9_]+)\] (\w+):")
_CONFLICT = re.compile(r"!\s*(\S+?\.md):\d+: (.+?) \(in “(.+?)”\)")
_CANONISH = re.compile(r"canon|consisten|continuity|contradict|eyes|hair|character", re.I)


def _shown(inputs: Inputs) -> dict[str, str]:
    return dict(inputs)


def conference_tools(task: str, inputs: Inputs) -> str:
    shown = _shown(inputs)
    so_far = shown.get("receipts_so_far", "")
    allowed = re.findall(r"^- (\w+):", shown.get("tools", ""), re.MULTILINE)
    called = set(re.findall(r"\] (\w+):", so_far))
    choice: dict[str, Any] = {"tool": None, "args": {}, "reason": "the receipts answer it"}
    if "file_locator" not in called and "file_locator" in allowed:
        choice = {
            "tool": "file_locator",
            "args": {"search_criteria": task},
            "reason": "survey the workspace first",
        }
    elif "canon_checker" not in called and "canon_checker" in allowed and _CANONISH.search(task):
        found = re.search(r"\] file_locator:.*?\noutput: (\{.*)", so_far, re.S)
        survey: dict[str, Any] = {}
        if found:
            try:
                survey = json.loads(found.group(1))
            except ValueError:  # cut at the shown length: take the paths another way
                survey = {}
        canon = survey.get("canon") or _listed("canon", so_far)
        scenes = survey.get("scenes") or _listed("scenes", so_far)
        canon, scenes = list(dict.fromkeys(canon)), list(dict.fromkeys(scenes))
        if canon and scenes:
            choice = {
                "tool": "canon_checker",
                "args": {"canon_paths": canon, "scene_paths": scenes},
                "reason": "the question is about canon",
            }
    elif not called and allowed:
        choice = {"tool": allowed[0], "args": {}, "reason": "the round requires a tool"}
    return json.dumps(choice)


def _listed(key: str, text: str) -> list[str]:
    """A list of paths from a survey's JSON, even when the JSON shown was cut short."""
    found = re.search(rf'"{key}":\s*(\[[^\]]*\])', text)
    if not found:
        return []
    try:
        value = json.loads(found.group(1))
    except ValueError:
        return []
    return [v for v in value if isinstance(v, str)]


def _grounds(evidence: str) -> tuple[list[tuple[str, str]], list[tuple[str, str, str, str]]]:
    """(receipt id, tool) for each receipt, and (receipt, file, finding, quote) for each
    conflict a tool quoted from a file."""
    receipts = _RECEIPT.findall(evidence)
    conflicts = []
    current = None
    for line in evidence.splitlines():
        header = _RECEIPT.search(line)
        if header:
            current = header.group(1)
        found = _CONFLICT.search(line)
        if found and current:
            conflicts.append((current, found.group(1), found.group(2), found.group(3)))
    return receipts, conflicts


def _reply(role: str, evidence: str, synthesis: bool = False) -> str:
    receipts, conflicts = _grounds(evidence)
    if not receipts:
        return "ABSTAIN: the Chief gathered no evidence."
    first = receipts[-1][0]
    if conflicts:
        receipt, path, finding, quote = conflicts[0]
        file_cite = f'file: {path} "{quote}"'
        text = {
            "continuity": (
                f"{finding}: the text contradicts the canon card.",
                f"receipt_id: {receipt}; {file_cite}",
            ),
            "critic": (f"A reader who knows the canon will stumble on “{quote}”.", file_cite),
            "editor": (f"Change the wording of “{quote}” to match the canon.", file_cite),
            "writer": (
                f"The scene needs a fix where it says “{quote}” before the next draft.",
                f"{file_cite}; question",
            ),
            "planner": (
                "Fix the contradiction before drafting further scenes.",
                f"receipt_id: {receipt}; question",
            ),
        }.get(role)
    else:
        text = {
            "continuity": (
                "No contradiction with the canon in what the tools checked.",
                f"receipt_id: {first}",
            ),
            "planner": ("Nothing blocks the next scene.", f"receipt_id: {first}; question"),
        }.get(role)
    if text is None:
        return f"ABSTAIN: nothing in the evidence for the {role} role."
    body, cites = text
    extra = (
        "\nExtra insight: the same check is worth running on every new draft." if synthesis else ""
    )
    return f"{body}{extra}\nEvidence: {cites}"


def conference_interpret(task: str, inputs: Inputs) -> str:
    shown = _shown(inputs)
    return _reply(shown.get("role", ""), shown.get("evidence", ""))


def conference_synthesis(task: str, inputs: Inputs) -> str:
    shown = _shown(inputs)
    return _reply(shown.get("role", ""), shown.get("evidence", ""), synthesis=True)


def conference_triage(task: str, inputs: Inputs) -> str:
    shown = _shown(inputs)
    reply = _reply(shown.get("role", ""), shown.get("evidence", ""))
    if reply.startswith("ABSTAIN"):
        return reply
    return f"RELEVANT: {reply.splitlines()[0]}"


def conference_finding(task: str, inputs: Inputs) -> str:
    shown = _shown(inputs)
    return _reply(shown.get("role", ""), shown.get("evidence", "")).splitlines()[0]


def conference_evidence(task: str, inputs: Inputs) -> str:
    shown = _shown(inputs)
    return _reply(shown.get("role", ""), shown.get("evidence", "")).splitlines()[-1]


HANDLERS = {
    "conference_tools": conference_tools,
    "conference_interpret": conference_interpret,
    "conference_synthesis": conference_synthesis,
    "conference_triage": conference_triage,
    "conference_finding": conference_finding,
    "conference_evidence": conference_evidence,
}
