"""Seed 004's outcome codes and its propagation table, as data.

Every run's terminal event carries one of nine codes. When a child run ends, the layer
that started it reacts by the table below, cell by cell as the seed has it: the child's
code and the parent's layer give the reaction. DEPTH_EXCEEDED is re-raised by every layer
(never absorbed), which `test_outcome_codes.py` checks for each.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Outcome(IntEnum):
    SUCCESS = 0
    FAILURE = 1
    DEPTH_EXCEEDED = 2
    HUMAN_INPUT = 3
    NEEDS_REFINEMENT = 10
    NEEDS_ESCALATION = 11
    PARTIAL_SUCCESS = 12
    INTERRUPTED = 20
    TIMEOUT = 21


def outcome_name(code: int | None) -> str:
    """`SUCCESS`, `DEPTH_EXCEEDED`, ... (`code 7` for a code the seed does not name)."""
    if code is None:
        return "-"
    try:
        return Outcome(code).name
    except ValueError:
        return f"code {code}"


class Layer(StrEnum):
    """What the run that starts a child is to it (seed 004's L2, L3, L4)."""

    ORCHESTRATOR = "orchestrator"
    COORDINATOR = "coordinator"
    CAMPAIGN = "campaign"


class Reaction(StrEnum):
    #: The child's work is taken as it is: the step completes with its manifest.
    ABSORB = "absorb"
    #: The step completes, and the parent ends a partial success (12) at best.
    ABSORB_PARTIAL = "absorb_partial"
    #: The child runs once more; if it ends the same way again, the parent re-raises.
    RETRY_ONCE = "retry_once"
    #: The child runs once more with the resolution (its failure and findings) in its
    #: args; a second refinement is re-raised.
    REINVOKE_WITH_RESOLUTION = "reinvoke_with_resolution"
    #: The parent ends with the child's code.
    RERAISE = "reraise"
    #: The parent ends NEEDS_ESCALATION (11): its own parent (or a person) decides.
    ESCALATE = "escalate"
    #: The parent ends HUMAN_INPUT (3): a person decides.
    PRESENT_TO_HUMAN = "present_to_human"


_O, _L, _R = Outcome, Layer, Reaction

#: Seed 004 §5, "Exit Code Propagation": child code -> parent layer -> reaction. Codes the
#: table has no row for (3 HUMAN_INPUT, 21 TIMEOUT) are re-raised: a person must answer,
#: and time that ran out does not come back by asking again.
PROPAGATION: dict[Outcome, dict[Layer, Reaction]] = {
    _O.SUCCESS: {
        _L.ORCHESTRATOR: _R.ABSORB,
        _L.COORDINATOR: _R.ABSORB,
        _L.CAMPAIGN: _R.ABSORB,
    },
    _O.FAILURE: {
        _L.ORCHESTRATOR: _R.RETRY_ONCE,
        _L.COORDINATOR: _R.RETRY_ONCE,
        _L.CAMPAIGN: _R.ESCALATE,
    },
    _O.DEPTH_EXCEEDED: {
        _L.ORCHESTRATOR: _R.RERAISE,
        _L.COORDINATOR: _R.RERAISE,
        _L.CAMPAIGN: _R.RERAISE,
    },
    _O.HUMAN_INPUT: {
        _L.ORCHESTRATOR: _R.RERAISE,
        _L.COORDINATOR: _R.RERAISE,
        _L.CAMPAIGN: _R.RERAISE,
    },
    _O.NEEDS_REFINEMENT: {
        _L.ORCHESTRATOR: _R.RERAISE,
        _L.COORDINATOR: _R.REINVOKE_WITH_RESOLUTION,
        _L.CAMPAIGN: _R.RETRY_ONCE,
    },
    _O.NEEDS_ESCALATION: {
        _L.ORCHESTRATOR: _R.RERAISE,
        _L.COORDINATOR: _R.RERAISE,
        _L.CAMPAIGN: _R.PRESENT_TO_HUMAN,
    },
    _O.PARTIAL_SUCCESS: {
        _L.ORCHESTRATOR: _R.ABSORB_PARTIAL,
        _L.COORDINATOR: _R.ABSORB_PARTIAL,
        _L.CAMPAIGN: _R.ABSORB_PARTIAL,
    },
    _O.INTERRUPTED: {
        _L.ORCHESTRATOR: _R.RERAISE,
        _L.COORDINATOR: _R.RERAISE,
        _L.CAMPAIGN: _R.RERAISE,
    },
    _O.TIMEOUT: {
        _L.ORCHESTRATOR: _R.RERAISE,
        _L.COORDINATOR: _R.RERAISE,
        _L.CAMPAIGN: _R.RERAISE,
    },
}

#: How many times one child of a step may be started in all (the first run and the one
#: more a retry or a re-invocation gives it).
MAX_CHILD_ATTEMPTS = 2


def reaction(layer: Layer, code: int) -> Reaction:
    """What `layer` does when a child ends with `code` (an unknown code is a failure)."""
    try:
        row = PROPAGATION[Outcome(code)]
    except ValueError:
        row = PROPAGATION[Outcome.FAILURE]
    return row[layer]


def settled(layer: Layer, code: int, attempt: int) -> tuple[Reaction, int | None]:
    """The reaction to a child's `attempt`-th ending, with no second chance past the
    bound, and the code the parent ends with if it re-raises (None when it goes on)."""
    chosen = reaction(layer, code)
    again = chosen in (Reaction.RETRY_ONCE, Reaction.REINVOKE_WITH_RESOLUTION)
    if again and attempt >= MAX_CHILD_ATTEMPTS:
        chosen = Reaction.RERAISE
    if chosen is Reaction.RERAISE:
        return chosen, code
    if chosen is Reaction.ESCALATE:
        return chosen, int(Outcome.NEEDS_ESCALATION)
    if chosen is Reaction.PRESENT_TO_HUMAN:
        return chosen, int(Outcome.HUMAN_INPUT)
    return chosen, None
