"""Runs inside runs (seed 004): the `child_run` step kind, its records, and the pure
decisions of how a step's children go on.

A `child_run` step starts a run of a named recipe (one per item with `for_each`) and waits.
What the step asks for is recorded on the parent (`ChildRunsRequested`, with the child
recipe's snapshot); a tracked policy (`engine/child_policies.py`) starts the children, at
most `max_at_once` at a time, records each start and end on the parent, and settles the
step by seed 004's propagation table (`domain/outcome_codes.py`): the manifest of what the
children produced becomes the step's slot, or the parent fails with the code that travels
up. Every child id is fixed by parent, step instance, item and attempt, so a reaction
replayed after a crash never starts a child twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import Field, JsonValue

from controlroom.domain.canonical import sha256_text
from controlroom.domain.events import JournalRecord
from controlroom.domain.outcome_codes import Layer, Outcome, Reaction, settled
from controlroom.domain.outcomes import EventSpec, StepOutcome
from controlroom.domain.run_events import SlotWritten
from controlroom.domain.steps import STEP_KINDS, ArgValue, KnownNames, Phase, Ref, StepSpec

#: A run nests at most this deep unless its recipe or its task says otherwise (seed 004's
#: "multi-stage workflow" default).
DEFAULT_MAX_DEPTH = 3
MAX_DEPTH_CAP = 10
#: Children of one step: how many in all, and how many at once at most.
MAX_CHILDREN = 50
MAX_AT_ONCE_CAP = 16


class ChildRunStep(StepSpec):
    """Start a run of `recipe` with `args` (`$ref`s read the parent's task and slots) and
    the parent's task description (or `description`), and wait for it; with `for_each` (a
    list), one child per item, the item passed as the arg `item_arg`, at most
    `max_at_once` running at a time. `layer` is what this run is to its children in seed
    004's table (an orchestrator's stages, a coordinator's phases)."""

    default_phase: ClassVar[Phase | None] = None
    kind: Literal["child_run"] = "child_run"
    recipe: str = Field(min_length=1)
    args: dict[str, ArgValue] = Field(default_factory=dict)
    description: str | None = None
    for_each: Ref | None = None
    item_arg: str = "item"
    max_at_once: int = Field(default=4, ge=1, le=MAX_AT_ONCE_CAP)
    layer: Layer = Layer.ORCHESTRATOR
    #: The parent's task args go to each child (under `args`): a stage sees the scope
    #: (`chapter_number`, `path`) its orchestrator was asked for.
    pass_args: bool = True
    #: Each child's wall-clock limit in seconds (never past this run's own deadline); a
    #: child past it ends TIMEOUT (21).
    timeout_s: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)

    def refs(self) -> Iterator[tuple[str, str]]:
        for name, value in self.args.items():
            if isinstance(value, Ref):
                yield f"args.{name}.$ref", value.ref
        if self.for_each is not None:
            yield "for_each.$ref", self.for_each.ref

    def problems(self, known: KnownNames) -> Iterator[tuple[str, str]]:
        recipes = getattr(known, "recipes", None)
        if recipes is not None and self.recipe not in recipes:
            yield "recipe", f"unknown recipe '{self.recipe}'"

    def actor(self) -> str:
        return f"run of {self.recipe}"


STEP_KINDS.register(ChildRunStep)


# -- records on the parent ---------------------------------------------------------------------


class ChildRunsRequested(JournalRecord):
    """What the step asks for: one child per entry of `children`, of the recipe snapshot."""

    type_name: ClassVar[str] = "ChildRunsRequested"
    recipe_id: str
    recipe: dict[str, Any]
    #: Each child: `index`, `args`, `description`.
    children: list[dict[str, Any]]
    max_at_once: int
    layer: str
    #: The children's place in the tree: their depth, the budget they are given, the root.
    depth: int
    max_depth: int
    root_run_id: str
    #: The ladders of the child recipe's steps, resolved when the step asked.
    ladders: dict[str, Any] = Field(default_factory=dict)
    #: When every child must have ended (the step's `timeout_s`, within the parent's own).
    deadline: datetime | None = None


class ChildRunStarted(JournalRecord):
    type_name: ClassVar[str] = "ChildRunStarted"
    index: int
    attempt: int
    run_id: str


class ChildRunEnded(JournalRecord):
    """A child's terminal event, as its parent saw it: its code, and what it cost."""

    type_name: ClassVar[str] = "ChildRunEnded"
    index: int
    attempt: int
    run_id: str
    status: str
    outcome: int
    error: str | None = None
    #: The child's slots and files (its manifest), for the step's own slot.
    slots: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)


def child_run_id(parent_id: str, instance: str, index: int, attempt: int) -> str:
    key = f"{parent_id}:{instance}:{index}:{attempt}"
    return "run_" + hashlib.sha256(key.encode()).hexdigest()[:20]


# -- the decision --------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartChild:
    index: int
    attempt: int
    run_id: str
    args: dict[str, JsonValue]
    description: str


@dataclass(frozen=True)
class Settle:
    """Every child has ended for good: the step completes (`failure` None) or fails with
    `outcome`; `partial` marks a completion the parent ends 12 for."""

    outcome: int
    failure: str | None
    partial: bool
    ended: tuple[ChildRunEnded, ...]


@dataclass(frozen=True)
class Moves:
    start: list[StartChild] = field(default_factory=list)
    settle: Settle | None = None


#: When children of one step end differently, the code that travels up first: a depth
#: exceeded anywhere reaches the root unchanged.
_PRECEDENCE = (
    Outcome.DEPTH_EXCEEDED,
    Outcome.INTERRUPTED,
    Outcome.TIMEOUT,
    Outcome.HUMAN_INPUT,
    Outcome.NEEDS_ESCALATION,
    Outcome.NEEDS_REFINEMENT,
    Outcome.FAILURE,
)
#: Codes a coordinator's `for_each` may set aside when other items succeeded (a partial
#: success, 12): a stage that failed or needs work. Never a depth, a person, or time.
_PARTIAL_OK = frozenset({Outcome.FAILURE, Outcome.NEEDS_REFINEMENT, Outcome.NEEDS_ESCALATION})


def next_moves(
    parent_id: str,
    instance: str,
    requested: ChildRunsRequested,
    started: Sequence[ChildRunStarted],
    ended: Sequence[ChildRunEnded],
) -> Moves:
    """Which children to start now, or how the step settles, from the step's records."""
    layer = Layer(requested.layer)
    latest: dict[int, int] = {}
    for record in started:
        latest[record.index] = max(latest.get(record.index, 0), record.attempt)
    ended_by = {(e.index, e.attempt): e for e in ended}
    running = sum(1 for index, attempt in latest.items() if (index, attempt) not in ended_by)
    starts: list[StartChild] = []
    finals: list[ChildRunEnded] = []
    waiting_on = 0
    # Once a child has ended with a code that travels up whatever the others do (a depth
    # exceeded, an interruption), no further child is started: the step fails anyway.
    doomed = any(_travels_up(layer, e) for e in ended if latest.get(e.index) == e.attempt)
    for child in requested.children:
        index = int(child["index"])
        attempt = latest.get(index, 0)
        if attempt == 0:
            if doomed:
                continue
            waiting_on += 1
            if running + len(starts) < requested.max_at_once:
                starts.append(_start(parent_id, instance, child, 1, {}))
            continue
        end = ended_by.get((index, attempt))
        if end is None:
            waiting_on += 1
            continue
        chosen, _ = settled(layer, end.outcome, attempt)
        if not doomed and chosen in (Reaction.RETRY_ONCE, Reaction.REINVOKE_WITH_RESOLUTION):
            waiting_on += 1
            extra: dict[str, JsonValue] = {}
            if chosen is Reaction.REINVOKE_WITH_RESOLUTION:
                extra = {"resolution": end.error or f"ended {Outcome(end.outcome).name}"}
            if running + len(starts) < requested.max_at_once:
                starts.append(_start(parent_id, instance, child, attempt + 1, extra))
            continue
        finals.append(end)
    if starts or waiting_on:
        return Moves(start=starts)
    return Moves(settle=_settle(layer, finals, several=len(requested.children) > 1))


def _travels_up(layer: Layer, end: ChildRunEnded) -> bool:
    _, code = settled(layer, end.outcome, end.attempt)
    return code is not None and _outcome(code) not in _PARTIAL_OK


def _start(
    parent_id: str,
    instance: str,
    child: Mapping[str, Any],
    attempt: int,
    extra: dict[str, JsonValue],
) -> StartChild:
    index = int(child["index"])
    return StartChild(
        index=index,
        attempt=attempt,
        run_id=child_run_id(parent_id, instance, index, attempt),
        args={**dict(child.get("args") or {}), **extra},
        description=str(child.get("description") or ""),
    )


def _settle(layer: Layer, finals: list[ChildRunEnded], *, several: bool) -> Settle:
    raised: list[tuple[int, ChildRunEnded]] = []
    partial = False
    for end in finals:
        chosen, code = settled(layer, end.outcome, end.attempt)
        if code is not None:
            raised.append((code, end))
        elif chosen is Reaction.ABSORB_PARTIAL:
            partial = True
    succeeded = len(finals) - len(raised)
    # Some items of a fan-out failed and others did not: kept as a partial success, unless
    # what failed must travel up whatever else happened.
    if (
        raised
        and several
        and succeeded
        and all(_outcome(code) in _PARTIAL_OK for code, _ in raised)
    ):
        return Settle(0, None, True, tuple(finals))
    if raised:
        code, end = min(raised, key=lambda pair: _rank(pair[0]))
        what = f"child run {end.run_id} (item {end.index}, attempt {end.attempt})"
        reason = f"{what} ended {_name(code)}" + (f": {end.error}" if end.error else "")
        return Settle(code, reason, False, tuple(finals))
    return Settle(0, None, partial, tuple(finals))


def _outcome(code: int) -> Outcome | None:
    try:
        return Outcome(code)
    except ValueError:
        return None


def _rank(code: int) -> int:
    known = _outcome(code)
    return _PRECEDENCE.index(known) if known in _PRECEDENCE else len(_PRECEDENCE)


def _name(code: int) -> str:
    known = _outcome(code)
    return known.name if known is not None else f"code {code}"


# -- the step's slot ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ChildrenOutcome(StepOutcome):
    """The manifest of a settled step: each child's run, outcome, slots and files."""

    text: str
    output_sha256: str
    input_slot_refs: list[str]

    @classmethod
    def of(cls, settle: Settle) -> ChildrenOutcome:
        children = [
            {
                "index": e.index,
                "run_id": e.run_id,
                "attempt": e.attempt,
                "status": e.status,
                "outcome": e.outcome,
                "outcome_name": _name(e.outcome),
                "slots": e.slots,
                "files": e.files,
                **({"error": e.error} if e.error else {}),
            }
            for e in sorted(settle.ended, key=lambda e: e.index)
        ]
        manifest = {
            "outcome": 12 if settle.partial else 0,
            "partial": settle.partial,
            "children": children,
            "files": sorted({f for e in settle.ended for f in e.files}),
        }
        text = json.dumps(manifest, indent=2)
        return cls(text, sha256_text(text), [])

    def events(self, step: StepSpec, session_id: str) -> list[EventSpec]:
        children = json.loads(self.text)["children"]
        done = sum(1 for e in children if e["outcome"] in (0, 12))
        total = len(children)
        return [
            (
                SlotWritten,
                {
                    "slot": step.output_slot,
                    "kind": "artifact",
                    "agent_id": "child_runs",
                    "text": self.text,
                    "sha256": self.output_sha256,
                    "summary": f"{done} of {total} child run(s) succeeded",
                },
            )
        ]

    def preview_source(self) -> str:
        return self.text


class ChildRunsSettled(JournalRecord):
    """How the step's children ended, recorded with the step's completion or failure:
    `partial` when the parent is to end a partial success (12)."""

    type_name: ClassVar[str] = "ChildRunsSettled"
    outcome: int
    partial: bool = False
