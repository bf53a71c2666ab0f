"""Flow policies: what a run does next, decided from a read-only view of the run.

The runner never walks an index itself; after every step (done or failed) the run asks its
flow, which answers with a `Decision`: run a step (with per-instance overrides), the steps
are done (the Definition of Done follows), or fail the run with an outcome code. Linear flow
is appendix B's: phase A then phase B, each step once, in order, and a failed step fails the
run. Other flows (a retry ladder, a gate's rollback, a showrunner's choice) register here
by name and a recipe names the one it runs (`"flow": "name"` or `{"policy": …, "options":
…}`); they may pick a step again (`draft#2`).

An answer other than linear's is recorded as a `FlowDecided` event, with the candidates,
the choice, the reason and a hash of the view it was made from; replay and resume read
those events and never ask the flow (or a model behind it) again. A flow waits by choosing
a step whose performer waits (a person, a child run): waiting belongs to steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from controlroom.domain.canonical import sha256_json
from controlroom.domain.errors import BadInputError
from controlroom.domain.recipe import Recipe


@dataclass(frozen=True)
class Performed:
    """One finished step instance, in the order they finished."""

    index: int
    step_id: str
    instance_id: str
    #: The `sha256:` of what the instance wrote to its output slot ("" when unknown).
    output_hash: str = ""


#: What kind of failure ended a step: a model server that kept failing or a reply cut at
#: the token limit (`transport`), a reply that never met its contract (`contract`,
#: STOP_HOOK), the step's own work (`performer`), a gate's verdict (`gate`), a triage that
#: blocked it (`blocked`) or set it aside (`deferred`).
FailureKind = Literal[
    "transport",
    "contract",
    "performer",
    "gate",
    "blocked",
    "deferred",
    "child",
    "depth",
    "timeout",
    "budget",
    "refinement",
]


@dataclass(frozen=True)
class StepFailure:
    index: int
    step_id: str
    instance_id: str
    kind: FailureKind
    error_type: str
    error: str
    #: Seed 004's code the failure carries up (a child run's, a depth exceeded): the run
    #: ends with it, whatever its flow or ladder would do with a plain failure.
    outcome: int | None = None


@dataclass(frozen=True)
class HumanAnswer:
    """A person's resolution for a step that waited for one."""

    step_id: str
    instance_id: str
    resolution: str
    by: str
    #: The model the person chose for the step's next run (else the ladder's strongest).
    model: str | None = None


@dataclass(frozen=True)
class PastDecision:
    """A decision recorded earlier in the run (from its `FlowDecided` event)."""

    after: str | None
    choice: str
    instance_id: str | None
    reason: str
    #: The ladder rung the decision climbed, when it is one (`domain/ladder.py`).
    rung: Mapping[str, Any] | None = None
    #: An adaptive loop's turn (`domain/adaptive_flow.py`), when it is one.
    loop: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Overrides:
    """What changes for one step instance: the model (`provider:model`), text added to the
    prompt (feedback, a consult's solution), args merged over the step's own."""

    model: str | None = None
    prompt_additions: tuple[str, ...] = ()
    args: Mapping[str, Any] = field(default_factory=dict)
    #: A ladder rung's work around the step (consult, triage, a person): `engine/ladder.py`.
    ladder: Mapping[str, Any] = field(default_factory=dict)
    #: The role woken for the instance instead of the step's own (a loop's Showrunner may
    #: choose another role the step's library entry allows).
    role: str | None = None

    def __bool__(self) -> bool:
        return bool(self.model or self.prompt_additions or self.args or self.ladder or self.role)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.model:
            data["model"] = self.model
        if self.prompt_additions:
            data["prompt_additions"] = list(self.prompt_additions)
        if self.args:
            data["args"] = dict(self.args)
        if self.ladder:
            data["ladder"] = dict(self.ladder)
        if self.role:
            data["role"] = self.role
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Overrides:
        data = data or {}
        return cls(
            model=data.get("model"),
            prompt_additions=tuple(data.get("prompt_additions") or ()),
            args=dict(data.get("args") or {}),
            ladder=dict(data.get("ladder") or {}),
            role=data.get("role"),
        )


NO_OVERRIDES = Overrides()


@dataclass(frozen=True)
class RunStep:
    """Perform recipe step `index` next (a new instance if it ran before)."""

    index: int
    overrides: Overrides = NO_OVERRIDES
    reason: str = ""
    rung: Mapping[str, Any] | None = None
    loop: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class StepsDone:
    """No more steps: the Definition of Done decides how the run ends."""

    reason: str = ""
    rung: Mapping[str, Any] | None = None
    loop: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class FailRun:
    """End the run failed, with an outcome code (seed 004: 1 FAILURE, 11 NEEDS_ESCALATION…)."""

    reason: str
    outcome: int = 1
    rung: Mapping[str, Any] | None = None
    loop: Mapping[str, Any] | None = None


Decision = RunStep | StepsDone | FailRun


@dataclass(frozen=True)
class RunView:
    """What a flow may look at: read-only, and all of it from the run's events."""

    recipe: Recipe
    history: Sequence[Performed]
    slots: Mapping[str, Any]
    decisions: Sequence[PastDecision]
    times_started: Mapping[str, int]
    #: The failure of the step that just failed; None after a step completed.
    failure: StepFailure | None = None
    #: The ladder each step climbs when it fails, as recorded when the run started.
    ladders: Mapping[str, Any] = field(default_factory=dict)
    #: A person's answer to the step that waited for one (None otherwise).
    answer: HumanAnswer | None = None
    #: The triage verdicts so far in the run (RELAX, DEFER, BLOCK), oldest first.
    triage: Sequence[str] = ()

    @property
    def options(self) -> Mapping[str, Any]:
        """The options the recipe gives its flow."""
        return self.recipe.flow_options()

    def next_in_order(self) -> int | None:
        following = self.history[-1].index + 1 if self.history else 0
        return following if following < len(self.recipe.steps) else None

    def fingerprint(self) -> str:
        """A hash of what the decision was made from (recorded with it)."""
        return "sha256:" + sha256_json(
            {
                "history": [p.instance_id for p in self.history],
                "slots": {k: sha256_json(v) for k, v in sorted(self.slots.items())},
                "decisions": len(self.decisions),
                "failure": None
                if self.failure is None
                else [self.failure.instance_id, self.failure.kind, self.failure.error],
                **(
                    {"answer": [self.answer.instance_id, self.answer.resolution]}
                    if self.answer
                    else {}
                ),
            }
        )


class FlowPolicy(Protocol):
    name: str

    def decide(self, view: RunView) -> Decision:
        """What the run does next, after a step completed or (`view.failure`) failed."""
        ...


class LinearFlow:
    """Appendix B: every step once, in order; a failed step fails the run."""

    name = "linear"

    def decide(self, view: RunView) -> Decision:
        if view.failure is not None:
            return FailRun(f"step '{view.failure.step_id}' failed: {view.failure.error}")
        index = view.next_in_order()
        return StepsDone() if index is None else RunStep(index)


LINEAR = LinearFlow()


class UnknownFlowError(BadInputError):
    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        super().__init__(f"no flow policy named '{name}' (known: {', '.join(sorted(known))})")


class FlowPolicies:
    """Flow policies by name. A new flow registers here; the runner does not change."""

    def __init__(self) -> None:
        self._by_name: dict[str, FlowPolicy] = {}

    def register(self, policy: FlowPolicy) -> None:
        self._by_name[policy.name] = policy

    def unregister(self, name: str) -> None:
        if name != LINEAR.name:
            self._by_name.pop(name, None)

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def get(self, name: str) -> FlowPolicy:
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownFlowError(name, list(self._by_name)) from None


FLOWS = FlowPolicies()
FLOWS.register(LINEAR)


def flow_for(recipe: Recipe) -> FlowPolicy:
    """The flow the recipe declares; linear when it declares none."""
    return FLOWS.get(recipe.flow_name())


def is_default(decision: Decision, view: RunView) -> bool:
    """Whether `decision` is what linear flow would answer: such answers are not recorded
    (the step's own events say it all, and stores written before flows read unchanged)."""
    if decision.rung or decision.loop or view.answer is not None:
        return False  # a ladder's rung and a loop's turn are always recorded
    linear = LINEAR.decide(view)
    if isinstance(decision, RunStep):
        return (
            isinstance(linear, RunStep)
            and linear.index == decision.index
            and not decision.overrides
        )
    if isinstance(decision, FailRun):
        return isinstance(linear, FailRun) and decision.outcome == 1
    return isinstance(linear, StepsDone)


#: How many times one recipe step may be started in a run unless the flow's options say
#: otherwise (`max_instances_per_step`, at most `MAX_INSTANCES_CAP`): a flow that keeps
#: choosing a step stops there.
MAX_INSTANCES_PER_STEP = 10
MAX_INSTANCES_CAP = 100


def instances_limit(recipe: Recipe) -> int:
    """The recipe's bound on starts of one step (checked at load: a whole number 1-100)."""
    default = MAX_INSTANCES_PER_STEP
    if recipe.loop is not None:  # a loop's decider runs once a turn, and re-asks
        default = max(default, min(MAX_INSTANCES_CAP, 2 * recipe.loop.caps.max_iterations + 2))
    limit = recipe.flow_options().get("max_instances_per_step", default)
    if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1:
        return min(limit, MAX_INSTANCES_CAP)
    return default


def instance_id(step_id: str, times_started_before: int) -> str:
    """`draft` the first time, `draft#2` the second, ..."""
    return step_id if times_started_before == 0 else f"{step_id}#{times_started_before + 1}"
