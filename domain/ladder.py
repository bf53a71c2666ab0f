"""The escalation ladder (seed 002's "dual-layer assistance"), as data and as a pure decision.

A step that fails (its model server kept failing, its reply never met the contract, its
reply was cut, or a review gate sent it back too often) climbs its ladder, one rung per
decision:

1. **escalate**: the step runs again on the next model of the chain, told what failed;
2. **consult**: every consult model is asked at once, a synthesizer merges their answers,
   and the step runs again on the strongest model with the solution in its prompt;
3. **triage**: a triage agent answers RELAX (a constraint relaxed, the step runs again),
   DEFER (the step is set aside; the run goes on and ends a partial success) or BLOCK —
   below `min_confidence` or past the per-run limits it is BLOCK;
4. **a person**: the step waits for an answer (`issues answer`), then runs again with it.

The ladder a step climbs is resolved when the run starts (the recipe step's own, else its
role's in models.json) and recorded on `RunStarted`, so deciding stays a pure function of
the run's events: `ladder_decide` reads the view and the rungs recorded so far, and replay
never asks anything again. Every rung is a `FlowDecided` event with `rung` set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field

from controlroom.domain.events import CallFacts, JournalRecord, ModelReplyEvent
from controlroom.domain.flow import (
    Decision,
    FailRun,
    Overrides,
    PastDecision,
    RunStep,
    RunView,
    StepFailure,
    StepsDone,
)
from controlroom.domain.ladder_spec import Ladder
from controlroom.domain.run_events import TokenUsage, usage_call

#: Failure kinds a ladder answers: the model's fault, or a reviewer's. A performer's own
#: failure (a missing slot, a workspace error) is not mended by another model.
LADDER_KINDS = frozenset({"transport", "contract", "gate", "blocked"})

#: Seed 004's outcome codes this module ends runs with.
NEEDS_REFINEMENT = 10
NEEDS_ESCALATION = 11

RungKind = Literal[
    "rollback", "accept", "escalate", "consult", "triage", "human", "answered", "deferred"
]

#: Why a step was passed over: a slot it reads belongs to a deferred step.
PASSED_OVER = "needs a deferred step's slot"

#: How much of a failure's text a prompt addition carries.
MAX_FAILURE_CHARS = 4_000


# -- what the rungs record ---------------------------------------------------------------------


class LadderCallRecorded(JournalRecord, ModelReplyEvent):
    """A model call a rung made around its step (a consult model's answer, the synthesis,
    the triage): committed at once, so a resumed step never asks again, and counted with
    every other call (cost, tokens) in the step's and the run's totals."""

    type_name: ClassVar[str] = "LadderCallRecorded"
    rung: str
    #: Which call of the rung: `consult#1`, `consult#2`, ..., `synthesis`, `triage`.
    which: str
    role: str
    tier: str = "t3"
    prompt_type: str
    provider: str
    model: str
    output: str
    usage: TokenUsage = Field(default_factory=TokenUsage)
    latency_ms: float = 0.0
    cost_usd: float | None = None
    attempts: int = 1
    request_ref: str | None = None

    def call(self) -> CallFacts:
        return usage_call(self.role, self)


class TriageDecided(JournalRecord):
    """The triage rung's verdict: what the triage agent answered and what the engine made
    of it (below `min_confidence`, or past a per-run limit, it is BLOCK)."""

    type_name: ClassVar[str] = "TriageDecided"
    #: The verdict acted on: RELAX, DEFER or BLOCK.
    decision: str
    #: What the agent answered, before the limits.
    asked: str
    confidence: float
    constraint: str | None = None
    relaxation: str | None = None
    reason: str = ""
    note: str = ""
    #: Why the engine's verdict differs from the agent's, when it does.
    overruled: str | None = None


# -- deciding ---------------------------------------------------------------------------------


def rung_of(decision: PastDecision) -> Mapping[str, Any]:
    return decision.rung or {}


def _rungs(view: RunView, subject: str) -> list[Mapping[str, Any]]:
    return [rung_of(d) for d in view.decisions if d.rung and rung_of(d).get("subject") == subject]


def failure_note(failure: StepFailure, tag: str = "previous_failure") -> str:
    """What a step is told of the failure it is run again for."""
    text = failure.error.strip()
    if len(text) > MAX_FAILURE_CHARS:
        text = text[:MAX_FAILURE_CHARS] + f"\n[… {len(failure.error) - MAX_FAILURE_CHARS} chars]"
    return (
        f'<{tag} step="{failure.instance_id}" kind="{failure.kind}">\n'
        f"{failure.error_type}: {text}\n</{tag}>"
    )


def _index_of(view: RunView, step_id: str) -> int:
    return [s.step_id for s in view.recipe.steps].index(step_id)


def _last_model(view: RunView, subject: str, ladder: Ladder | None) -> str | None:
    """The model the subject last ran on (the latest override naming one), else its base."""
    for decision in reversed(view.decisions):
        rung = rung_of(decision)
        if rung.get("subject") == subject and rung.get("to_model"):
            return str(rung["to_model"])
    return ladder.base if ladder else None


def _switch_to(model: str | None, ladder: Ladder | None) -> str | None:
    """The model override for a step's next instance: none when it is the step's own."""
    return model if model and model != (ladder.base if ladder else None) else None


def ladder_decide(view: RunView) -> Decision | None:
    """The ladder's answer after a failure, a gate's FAIL or a person's answer; None when
    the ladder has nothing to say (the run's own flow decides)."""
    if view.answer is not None:
        return _answered(view)
    failure = view.failure
    if failure is None:
        return None
    if failure.kind == "deferred":
        return _deferred(view, failure)
    if failure.kind not in LADDER_KINDS:
        return None
    subject = failure.step_id
    if failure.kind == "gate":
        gate = view.recipe.steps[failure.index]
        # A review gate sends another step back; a step that checks its own work (a loop's
        # item check, after its revisions) climbs its own ladder.
        target = str(getattr(gate, "rollback_to", "") or "")
        if target:
            gate_rung = _gate(view, failure, gate, target)
            if gate_rung is not None:
                return gate_rung
            subject = target
    ladder = view.ladders.get(subject)
    if ladder is None:
        if failure.kind == "gate":
            return FailRun(
                f"'{failure.step_id}' still fails its review after its rollbacks, and step "
                f"'{subject}' has no ladder to climb: {failure.error[:500]}",
                outcome=NEEDS_REFINEMENT,
            )
        return None
    return _climb(view, failure, subject, ladder)


def _gate(view: RunView, failure: StepFailure, gate: Any, target: str) -> Decision | None:
    """A gate's FAIL: back to `target` with the findings, at most `max_rollbacks` times;
    then an advisory gate lets the run go on, a blocking one hands over to the ladder."""
    done = sum(
        1
        for d in view.decisions
        if rung_of(d).get("kind") == "rollback" and rung_of(d).get("gate") == failure.step_id
    )
    limit = int(getattr(gate, "max_rollbacks", 0))
    feedback = failure_note(failure, "review_feedback")
    ladder = view.ladders.get(target)
    if done < limit:
        model = _last_model(view, target, ladder)
        return RunStep(
            _index_of(view, target),
            Overrides(
                model=_switch_to(model, ladder),
                prompt_additions=(feedback,),
            ),
            reason=f"review gate '{failure.step_id}' failed: back to '{target}' "
            f"(rollback {done + 1} of {limit})",
            rung={
                "kind": "rollback",
                "subject": target,
                "gate": failure.step_id,
                "n": done + 1,
                "of": limit,
                "failure": failure.error[:1000],
            },
        )
    if getattr(gate, "severity", "blocking") == "advisory":
        following = failure.index + 1
        reason = (
            f"advisory gate '{failure.step_id}' still fails after {limit} rollback(s): "
            "the run goes on, its findings recorded"
        )
        rung = {
            "kind": "accept",
            "subject": target,
            "gate": failure.step_id,
            "failure": failure.error[:1000],
        }
        if following < len(view.recipe.steps):
            return RunStep(following, reason=reason, rung=rung)
        return StepsDone(reason=reason, rung=rung)
    return None


def _climb(view: RunView, failure: StepFailure, subject: str, ladder: Ladder) -> Decision:
    rungs = _rungs(view, subject)
    index = _index_of(view, subject)
    note = failure_note(failure)
    current = _last_model(view, subject, ladder)
    climbed = {str(r.get("kind")) for r in rungs}
    escalations = sum(1 for r in rungs if r.get("kind") == "escalate")
    common = {
        "subject": subject,
        "from_model": current,
        "failure": failure.error[:1000],
        "failure_kind": failure.kind,
        "failed_instance": failure.instance_id,
    }
    fresh = failure.kind != "blocked" and not climbed & {"consult", "triage", "human"}
    if fresh and escalations < len(ladder.chain):
        to = ladder.chain[escalations]
        return RunStep(
            index,
            Overrides(model=to, prompt_additions=(note,)),
            reason=f"'{failure.instance_id}' failed ({failure.kind}): escalate "
            f"{current or 'role model'} -> {to} ({escalations + 1} of {len(ladder.chain)})",
            rung={**common, "kind": "escalate", "to_model": to, "n": escalations + 1},
        )
    strongest = ladder.strongest
    tried = [str(r.get("to_model")) for r in rungs if r.get("to_model")]
    if fresh and ladder.consult:
        return RunStep(
            index,
            Overrides(
                model=_switch_to(strongest, ladder),
                prompt_additions=(note,),
                ladder={
                    "rung": "consult",
                    "consult": list(ladder.consult),
                    "synthesizer": ladder.synthesizer,
                    "tried": [ladder.base or "role model", *tried],
                    "failures": _failures(view, subject, failure),
                },
            ),
            reason=f"the chain is spent: consult {', '.join(ladder.consult)}",
            rung={**common, "kind": "consult", "to_model": strongest},
        )
    if failure.kind != "blocked" and ladder.triage and not climbed & {"triage", "human"}:
        relaxed, deferred = _triage_counts(view)
        t = ladder.triage
        return RunStep(
            index,
            Overrides(
                model=_switch_to(strongest, ladder),
                ladder={
                    "rung": "triage",
                    "model": t.model,
                    "min_confidence": t.min_confidence,
                    "relax_left": max(0, t.max_relax_per_run - relaxed),
                    "defer_left": max(0, t.max_defer_per_run - deferred),
                    "failures": _failures(view, subject, failure),
                },
            ),
            reason=f"consulting did not mend '{subject}': triage by {t.model}",
            rung={**common, "kind": "triage", "to_model": strongest},
        )
    return RunStep(
        index,
        Overrides(
            ladder={
                "rung": "human",
                "owner": ladder.owner,
                "failures": _failures(view, subject, failure),
            }
        ),
        reason=f"the ladder of '{subject}' is spent: {ladder.owner} decides",
        rung={**common, "kind": "human", "owner": ladder.owner},
    )


def _failures(view: RunView, subject: str, failure: StepFailure) -> list[str]:
    """What failed so far on the subject's ladder, oldest first (bounded)."""
    past = [str(r.get("failure")) for r in _rungs(view, subject) if r.get("failure")]
    return [*past, failure.error[:1000]][-8:]


def _triage_counts(view: RunView) -> tuple[int, int]:
    relaxed = sum(1 for t in view.triage if t == "RELAX")
    deferred = sum(1 for t in view.triage if t == "DEFER")
    return relaxed, deferred


def _answered(view: RunView) -> Decision:
    answer = view.answer
    assert answer is not None
    ladder = view.ladders.get(answer.step_id)
    strongest = answer.model or (ladder.strongest if ladder else None)
    return RunStep(
        _index_of(view, answer.step_id),
        Overrides(
            model=_switch_to(strongest, ladder),
            prompt_additions=(
                f'<human_resolution by="{answer.by}">\n{answer.resolution}\n</human_resolution>',
            ),
        ),
        reason=f"{answer.by} answered: '{answer.step_id}' runs again with the resolution",
        rung={
            "kind": "answered",
            "subject": answer.step_id,
            "to_model": strongest,
            "by": answer.by,
        },
    )


def _deferred(view: RunView, failure: StepFailure) -> Decision:
    """Triage set the step aside: the run goes on with the steps that do not need it."""
    missing = deferred_slots(view.decisions) | {view.recipe.steps[failure.index].output_slot}
    decision, skipped, missing = skip_from(view, failure.index + 1, missing)
    rung = {
        "kind": "deferred",
        "subject": failure.step_id,
        "skipped": [failure.step_id, *skipped],
        "slots": sorted(missing),
        "failure": failure.error[:1000],
    }
    reason = f"'{failure.step_id}' deferred by triage: {failure.error[:300]}"
    if isinstance(decision, RunStep):
        return RunStep(decision.index, decision.overrides, reason, rung)
    return StepsDone(reason, rung)


def reads(step: Any) -> set[str]:
    """The slots a step reads: its inputs and the roots of its `$ref`s."""
    roots = {ref.split(".", 1)[0].split("[", 1)[0] for _, ref in step.refs()}
    return set(step.slots_read()) | (roots - {"task"})


def skip_from(
    view: RunView, index: int, missing: set[str]
) -> tuple[RunStep | StepsDone, list[str], set[str]]:
    """The first step from `index` on that needs none of the `missing` slots; the steps
    passed over (their slots missing in turn)."""
    steps = view.recipe.steps
    skipped: list[str] = []
    missing = set(missing)
    spec = view.recipe.iteration
    # A pipeline's gap analysis runs whatever was deferred: what is missing is its subject.
    keep = spec.gap_slot if spec is not None else None
    while index < len(steps) and reads(steps[index]) & missing and steps[index].output_slot != keep:
        skipped.append(steps[index].step_id)
        missing.add(steps[index].output_slot)
        index += 1
    if index < len(steps):
        return RunStep(index), skipped, missing
    return StepsDone(), skipped, missing


class Laddered:
    """Any flow, with the ladder first: failures it answers climb the failing step's
    ladder; everything else is the inner flow's, except that a step needing a deferred
    step's slot is passed over (recorded)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name

    def decide(self, view: RunView) -> Decision:
        failure = view.failure
        if failure is not None and failure.outcome is not None:
            # A code that travels up (seed 004's table already applied by the step, or a
            # depth exceeded, which no layer absorbs): no ladder, no second try here.
            return FailRun(f"step '{failure.step_id}' failed: {failure.error}", failure.outcome)
        decided = ladder_decide(view)
        if decided is not None:
            return decided
        decision: Decision = self.inner.decide(view)
        missing = deferred_slots(view.decisions)
        if not missing or not isinstance(decision, RunStep):
            return decision
        following, skipped, missing = skip_from(view, decision.index, missing)
        if not skipped:
            return decision
        rung = {
            "kind": "deferred",
            "subject": skipped[0],
            "skipped": skipped,
            "slots": sorted(missing),
            "failure": PASSED_OVER,
        }
        reason = f"passed over (needs a deferred step's slot): {', '.join(skipped)}"
        if isinstance(following, RunStep):
            return RunStep(following.index, reason=reason, rung=rung)
        return StepsDone(reason, rung)


def deferred_slots(decisions: Sequence[PastDecision]) -> set[str]:
    """Slots left unwritten because their steps were deferred."""
    return {
        str(slot)
        for d in decisions
        if rung_of(d).get("kind") == "deferred"
        for slot in rung_of(d).get("slots", [])
    }
