"""What the offline model does in a loop (seed 003): real, deterministic work.

- `loop_work` takes the work list from its JSON inputs (a tool's findings, gaps, flags),
  deals with the first few items on a first pass, and with every item a gate's findings
  name when it is sent back (a bounded first pass, then a revision; a list longer than
  the gate's feedback shows is dealt with whole on revision). It asks for the
  continuity role's help when its list holds canon conflicts and no collaborator has
  answered yet.
- `loop_gatecheck` checks that every item of the work list is among the work's
  `addressed` items: FAIL naming each one missing (and the step to go back to), else PASS.
- `showrunner_turn` decides as `domain/loops.typical_next` does: back to the step a failing
  gate names (or the work step it judged), else the typical flow; approves a collaboration
  with a role the loop has, once per step; never "stable" (code judges that).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from controlroom.domain import untrusted_json
from controlroom.domain.gates import MAX_FINDINGS
from controlroom.domain.loops import typical_next

Inputs = list[tuple[str, str]]

#: Items a first pass deals with; a revision deals with every item the gate names too.
FIRST_PASS = 3
#: The most findings a gate's feedback shows a revision (domain/gates.py `MAX_FINDINGS`).
MAX_SHOWN_FINDINGS = MAX_FINDINGS
#: At most this many items are read from the work list.
MAX_ITEMS = 40
#: Keys under which tool reports list their items, in the order they are looked for.
LIST_KEYS = (
    "findings", "conflicts", "issues", "gaps", "flags", "hooks", "problems",
    "long_sentences", "repeated_words", "adverbs", "items", "entries", "threads",
    "unresolved", "drops", "confusing_scenes", "uncarded", "read_in_text",
)  # fmt: skip
#: Fields that name an item, in the order they are tried.
LABEL_KEYS = (
    "message", "title", "name", "entity", "summary", "text", "sentence", "word", "path",
    "term", "attribute",
)  # fmt: skip

_TAG = re.compile(r"<(gate_findings|collaboration)\b[^>]*>(.*?)</\1>", re.DOTALL)


def _json(text: str) -> Any:
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return untrusted_json.loads(stripped)
    except ValueError:
        return None


def _label(item: Any) -> str | None:
    if isinstance(item, str):
        return " ".join(item.split())[:160] or None
    if isinstance(item, Mapping):
        parts = [str(item[k]) for k in LABEL_KEYS if isinstance(item.get(k), str | int)]
        if "line" in item and parts:
            parts[0] = f"{parts[0]} (line {item['line']})"
        return " ".join(" — ".join(parts[:2]).split())[:160] or None
    return None


def work_items(inputs: Inputs, skip: tuple[str, ...] = ()) -> list[str]:
    """The work list: labelled items of every list a JSON input holds under `LIST_KEYS`,
    nested reports included (an item under a file's entry is named with the file)."""
    items: list[str] = []

    def walk(value: Any, where: str, depth: int) -> None:
        if not isinstance(value, Mapping) or depth > 3:
            return
        for key, inner in value.items():
            if key in LIST_KEYS and isinstance(inner, list):
                for item in inner:
                    label = _label(item)
                    if label:
                        label = f"{where}: {label}" if where else label
                        if label not in items:
                            items.append(label)
            elif isinstance(inner, Mapping):
                named = str(key).rsplit("/", 1)[-1] if "." in str(key) else where
                walk(inner, named, depth + 1)

    for name, text in inputs:
        if name in skip or name == "also":
            continue
        walk(_json(text), "", 0)
    return items[:MAX_ITEMS]


def _also(inputs: Inputs) -> str:
    return "\n".join(text for name, text in inputs if name == "also")


def _tagged(text: str, tag: str) -> list[str]:
    return [body.strip() for name, body in _TAG.findall(text) if name == tag]


def _named_in(findings: str, items: list[str]) -> list[str]:
    return [item for item in items if item in findings]


def loop_work(task: str, inputs: Inputs) -> str:
    items = work_items(inputs)
    also = _also(inputs)
    findings = "\n".join(_tagged(also, "gate_findings"))
    helped = _tagged(also, "collaboration")
    chosen = items[:FIRST_PASS]
    chosen += [item for item in _named_in(findings, items) if item not in chosen]
    if findings and len(items) > FIRST_PASS + MAX_SHOWN_FINDINGS:
        # The gate's feedback shows at most MAX_SHOWN_FINDINGS of what it found missing; a
        # revision told only those would trade them for the next ones forever (a real
        # novel's 40-item list), so a revision of a long list deals with all of it.
        chosen += [item for item in items if item not in chosen]
    lines = [f"# {task.strip() or 'Loop step'}", ""]
    if not items:
        lines.append("The work list is empty: nothing in the inputs needs this step.")
    for item in chosen:
        lines.append(f"- **{item}** — revise where it stands, in the text's own voice; "
                     "keep events, names and order as they are.")  # fmt: skip
    left = len(items) - len(chosen)
    if left > 0:
        lines += ["", f"{left} more item(s) wait for a later pass."]
    if helped:
        lines += ["", "## From the collaborator", "", *helped]
    conflicts = any("conflict" in name.lower() or "canon" in item.lower()
                    for name, _ in inputs for item in items[:1])  # fmt: skip
    ask = None
    if conflicts and not helped and "collaboration_request" not in also:
        ask = {"role": "continuity", "reason": "the work list holds canon conflicts"}
    reply = {"artifact": "\n".join(lines), "addressed": chosen, "path": None,
             "collaboration": ask}  # fmt: skip
    return json.dumps(reply, indent=2, ensure_ascii=False)


def loop_collaborate(task: str, inputs: Inputs) -> str:
    also = _also(inputs)
    asked = " ".join(_tagged(also, "collaboration_request")) or "help with the work list"
    items = work_items(inputs)
    lines = [f"Asked: {asked}", ""]
    lines += [f"- {item}: checked against the canon cards in the inputs." for item in items[:5]]
    reply = {"artifact": "\n".join(lines), "addressed": items[:5], "path": None,
             "collaboration": None}  # fmt: skip
    return json.dumps(reply, indent=2, ensure_ascii=False)


def _work_of(inputs: Inputs) -> tuple[str | None, dict[str, Any]]:
    """The input holding the loop's work (a `loop_work` reply), by name."""
    for name, text in inputs:
        value = _json(text)
        if isinstance(value, dict) and "addressed" in value and "artifact" in value:
            return name, value
    return None, {}


def loop_gatecheck(task: str, inputs: Inputs) -> str:
    name, work = _work_of(inputs)
    items = work_items(inputs, skip=(name,) if name else ())
    addressed = {str(a) for a in work.get("addressed") or []}
    missing = [item for item in items if item not in addressed]
    also = _also(inputs)
    steps = re.findall(r"<loop_steps>\s*(.*?)\s*</loop_steps>", also, re.DOTALL)
    back = None
    if missing and steps:
        names = [s.strip() for s in steps[0].split(",") if s.strip()]
        back = names[-1] if names else None
    if name is None:
        missing = missing or ["the work to check is not among the inputs"]
    report = {
        "verdict": "FAIL" if missing else "PASS",
        "findings": [{"message": f"not addressed: {m}", "blocking": True} for m in missing],
        "back_to": back,
        "notes": f"{len(items) - len(missing)} of {len(items)} work-list item(s) dealt with",
    }
    return json.dumps(report, indent=2, ensure_ascii=False)


def showrunner_turn(task: str, inputs: Inputs) -> str:
    shown = dict(inputs)
    state = _json(shown.get("active_loop", "")) or {}
    allowed = [str(s) for s in state.get("allowed") or []]
    flow = [str(s) for s in state.get("typical_flow") or []]
    gate = state.get("last_gate") or {}
    back = None
    just_judged = isinstance(gate, Mapping) and gate.get("step") == state.get("last_step")
    if just_judged and gate.get("verdict") == "FAIL":
        back = gate.get("back_to") or state.get("last_work_step")
    choice = typical_next(allowed, flow, state.get("last_step"), back)
    turns = [t for t in state.get("turns") or [] if isinstance(t, Mapping)]
    helped = str(turns[-1].get("collaborator_for") or "") if turns else ""
    if helped in allowed:  # a collaborator just answered: the requester goes again with it
        choice, back = helped, helped
    asked = state.get("collaboration_request")
    collaboration = None
    if isinstance(asked, Mapping):
        roles = {r for e in state.get("library") or [] for r in e.get("roles") or []}
        requester = str(asked.get("from", "")).split("#")[0]
        before = any(t.get("collaborator_for") == requester for t in turns)
        collaboration = "approve" if asked.get("role") in roles and not before else "deny"
    if choice is None:
        reply = {"next": "ask_person", "role": None, "notes": "", "collaboration": collaboration,
                 "reason": "no allowed step can move the loop forward"}  # fmt: skip
    else:
        why = f"the gate failed: back to {choice}" if back == choice else "the typical flow"
        reply = {"next": choice, "role": None, "notes": "", "collaboration": collaboration,
                 "reason": why}  # fmt: skip
    return json.dumps(reply, indent=2, ensure_ascii=False)


HANDLERS = {
    "loop_work": loop_work,
    "loop_collaborate": loop_collaborate,
    "loop_gatecheck": loop_gatecheck,
    "showrunner_turn": showrunner_turn,
}
#: Prompt types whose offline handler reads what the flow added to the prompt ("## Also").
READS_ALSO = frozenset(HANDLERS)
