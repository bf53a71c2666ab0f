"""Reading a T1 agent's micro-step replies (seed 000, "Tier-Based Step Sizing").

A T1 (small, fast) agent runs a recipe's agent step as three tiny calls, each one decision:

1. **triage**: `FOCUS: …` (the one thing the output must get right) or `ABSTAIN: …` (the
   inputs do not allow the step; the step then fails with that reason, never guesses);
2. **finding**: the step's own output, under its output contract (the slot's text);
3. **evidence**: exactly one line `Evidence: slot: NAME "QUOTE"` naming the input the finding
   rests on and a passage of it. Checked here: the slot must be one the step read (or
   `task`) and the quote must really be in it, compared with whitespace and curly quotes
   normalised. The check is recorded with the call, not enforced: the finding stands on its
   own contract, and a weak citation is shown to the reader rather than failing the run.

Pure: the engine passes the texts the step was shown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from controlroom.domain.evidence import normalised

_ABSTAIN = re.compile(r"^\W*abstain\b\W*(.*)$", re.IGNORECASE | re.DOTALL)
_FOCUS = re.compile(r"^\W*focus\b\W*(.*)$", re.IGNORECASE | re.DOTALL)
#: `Evidence:` at a line's start, also in markdown emphasis (`**Evidence:**`, `__Evidence__:`).
#: Only spaces and tabs before it: `\s*` would span blank lines, and a reply of many of them
#: would then take quadratic time to scan.
_EVIDENCE = re.compile(
    r"^[ \t]*[*_]{0,3}evidence[*_]{0,3}[ \t]*:[ \t]*[*_]{0,3}", re.IGNORECASE | re.MULTILINE
)
_SLOT = re.compile(r"""^(?:slot\s*:\s*)?([A-Za-z_][\w.\-]*)\s*[—–:-]?\s*["“](.+)["”]\s*\.?$""")


@dataclass(frozen=True)
class Triage:
    decision: str  # "focus" or "abstain"
    text: str


@dataclass(frozen=True)
class EvidenceCheck:
    verified: bool
    slot: str | None = None
    problem: str | None = None


def read_triage(reply: str) -> Triage:
    """The triage decision; a reply that is neither keyword is read as the focus itself."""
    first = next((line.strip() for line in reply.splitlines() if line.strip()), "")
    if match := _ABSTAIN.match(first):
        rest = reply.strip()[len(first) :].strip()
        reason = " ".join(part for part in (match.group(1).strip(), rest) if part)
        return Triage("abstain", reason or "no reason given")
    if match := _FOCUS.match(reply.strip()):
        return Triage("focus", match.group(1).strip() or first)
    return Triage("focus", reply.strip())


def check_evidence(reply: str, shown: Mapping[str, str]) -> EvidenceCheck:
    """Does the one Evidence line cite an input the step read, quoting it faithfully?"""
    starts = list(_EVIDENCE.finditer(reply))
    if len(starts) != 1:
        return EvidenceCheck(
            False, problem=f"exactly one Evidence: line is required, found {len(starts)}"
        )
    # A model may wrap a long line: the citation runs to the end of its paragraph.
    line = " ".join(reply[starts[0].end() :].split("\n\n")[0].split())
    match = _SLOT.match(line)
    if match is None:
        return EvidenceCheck(False, problem=f"cannot read '{line[:80]}' (use slot: NAME \"QUOTE\")")
    slot, quote = match.group(1), match.group(2)
    if slot not in shown:
        return EvidenceCheck(
            False,
            slot,
            f"'{slot}' is not an input of this step (inputs: {', '.join(shown) or 'none'})",
        )
    if normalised(quote) not in normalised(shown[slot]):
        return EvidenceCheck(False, slot, f'the quote "{quote[:60]}" is not in {slot}')
    return EvidenceCheck(True, slot)
