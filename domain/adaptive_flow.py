"""The `adaptive` flow: a loop's turns (seed 003), on the engine's decision seam.

Phase A runs in order. Then, after every library step, code judges the loop first: the
stabilization criteria all hold → the steps are done (`stable`); the caps are reached →
done (`capped`: the run ends PARTIAL_SUCCESS, 12, which a parent or a plan sees); the loop
stalled → the stalled step climbs its failure ladder (NEEDS_ESCALATION, 11, when it has
none). Otherwise the Showrunner's decide step runs with the steps code allows; after it,
its accepted reply starts the chosen step (woken as the chosen role, with its notes, a
failing gate's findings and an approved collaborator's contribution in its prompt), starts
an approved collaborator, or ends the run for a person (HUMAN_INPUT, 3). A decide step that
failed, or a reply the flow still finds impossible, falls back to the typical flow.

Every turn is a `FlowDecided` event with `loop` set (turn number, candidates, criteria,
choice, role, reason, each tier's sha256, fallback, stall); replay and resume read them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from controlroom.domain.flow import (
    FLOWS,
    Decision,
    FailRun,
    Overrides,
    RunStep,
    RunView,
    StepFailure,
    StepsDone,
)
from controlroom.domain.ladder import ladder_decide
from controlroom.domain.loop_spec import LoopSpec
from controlroom.domain.loops import (
    ASK_PERSON,
    allowed_next,
    epilogue,
    judge,
    last_gate,
    last_library_step,
    last_turn,
    last_work_step,
    library_history,
    loop_of,
    pending_collaboration,
    progress,
    stall,
    typical_next,
)
from controlroom.domain.recipe import Recipe
from controlroom.domain.showrunner import choice_errors

HUMAN_INPUT = 3
NEEDS_ESCALATION = 11
#: At most this many characters of a collaborator's contribution join the prompt.
COLLABORATION_CHARS = 4000


def _index(recipe: Recipe, step_id: str) -> int:
    return [s.step_id for s in recipe.steps].index(step_id)


def role_choices(spec: LoopSpec) -> dict[str, list[str]]:
    return {entry.step: entry.allowed_roles() for entry in spec.library}


class AdaptiveFlow:
    name = "adaptive"

    def decide(self, view: RunView) -> Decision:
        recipe = view.recipe
        spec = loop_of(recipe)
        failure = view.failure
        if failure is not None:
            if failure.step_id == spec.decider:
                return self._fallback(view, spec, [f"{failure.error_type}: {failure.error}"])
            return FailRun(f"step '{failure.step_id}' failed: {failure.error}")
        following = view.next_in_order()
        last = view.history[-1] if view.history else None
        in_phase_a = last is None or recipe.phase_of(last.index) == "a"
        if in_phase_a and following is not None and recipe.phase_of(following) == "a":
            return RunStep(following)
        if last is not None and last.step_id == spec.decider:
            return self._act(view, spec)
        after = epilogue(spec, recipe)
        if last is not None and last.index in after:  # the loop is over: the rest in order
            return RunStep(following) if following in after else StepsDone()
        return self._turn(view, spec)

    # -- a turn: judge, then ask ----------------------------------------------------------

    def _turn(self, view: RunView, spec: LoopSpec) -> Decision:
        recipe = view.recipe
        held = judge(spec, recipe, view)
        count = sum(held.values())
        done = library_history(spec, view.history)
        turn = 1 + sum(1 for d in view.decisions if (d.loop or {}).get("kind") == "turn")
        moved = progress(spec, view, held)
        state: dict[str, Any] = {
            "turn": turn,
            "iteration": len(done),
            "criteria": held,
            "held": count,
            "progress": moved,
        }
        if all(held.values()):
            reason = f"stable after {len(done)} step(s): every criterion holds"
            ending = {**state, "kind": "end", "ending": "stable"}
            after = epilogue(spec, recipe)
            if after:
                return RunStep(after[0], reason=reason, loop=ending)
            return StepsDone(reason, loop=ending)
        if len(done) >= spec.caps.max_iterations:
            failing = ", ".join(name for name, ok in held.items() if not ok)
            reason = (
                f"capped: {len(done)} step(s) run (max_iterations {spec.caps.max_iterations}) "
                f"and not stable ({failing} not holding)"
            )
            return StepsDone(reason, loop={**state, "kind": "end", "ending": "capped"})
        stalled = stall(spec, view, moved) if done else None
        if stalled is not None:
            return self._stalled(view, spec, stalled, state)
        candidates = allowed_next(spec, view)
        if not candidates:
            reason = "capped: no library step may run (repeat caps or missing inputs)"
            return StepsDone(reason, loop={**state, "kind": "end", "ending": "capped"})
        pending = pending_collaboration(spec, recipe, view)
        loop: dict[str, Any] = {**state, "kind": "turn", "candidates": candidates}
        if pending is not None:
            loop["collaboration_request"] = {
                "from": pending.requester_instance,
                "role": pending.role,
                "reason": pending.reason,
            }
        reason = f"turn {turn}: the Showrunner chooses among {', '.join(candidates)}"
        return RunStep(_index(recipe, spec.decider), reason=reason, loop=loop)

    def _stalled(
        self, view: RunView, spec: LoopSpec, why: str, state: Mapping[str, Any]
    ) -> Decision:
        """A stall enters the stalled step's failure ladder (a stronger model, a consult,
        triage, a person); with no ladder the run ends NEEDS_ESCALATION."""
        recipe = view.recipe
        subject = self._stalled_step(view, spec)
        loop = {**state, "kind": "stall", "stall": why, "subject": subject}
        index = _index(recipe, subject)
        instance = next(p.instance_id for p in reversed(view.history) if p.step_id == subject)
        failure = StepFailure(index, subject, instance, "contract", "LoopStalled", why)
        climbed = ladder_decide(replace(view, failure=failure))
        if isinstance(climbed, RunStep) and climbed.index == index:
            # The stronger model is told what the loop tells the step (its description, the
            # gate's findings), or it could only repeat the stalled answer.
            told = (_describe(spec, view, subject), *self._additions(view, spec, subject))
            additions = (*told, *climbed.overrides.prompt_additions)
            overrides = replace(climbed.overrides, prompt_additions=additions)
            return replace(climbed, overrides=overrides, loop=loop)
        if isinstance(climbed, RunStep | StepsDone | FailRun):
            return replace(climbed, loop=loop)
        return FailRun(
            f"the loop stalled ({why}) and '{subject}' has no ladder to climb",
            outcome=NEEDS_ESCALATION,
            loop=loop,
        )

    @staticmethod
    def _stalled_step(view: RunView, spec: LoopSpec) -> str:
        """The work step a stall is blamed on: the one a failing gate names, else the
        last work step that ran."""
        gate = last_gate(spec, view.recipe, view)
        if gate is not None and not gate.passed and gate.back_to in role_choices(spec):
            return gate.back_to
        return last_work_step(spec, view) or library_history(spec, view.history)[-1].step_id

    # -- after the Showrunner answered ---------------------------------------------------

    def _act(self, view: RunView, spec: LoopSpec) -> Decision:
        recipe = view.recipe
        asked = last_turn(view.decisions)
        decider_slot = recipe.steps[_index(recipe, spec.decider)].output_slot
        value = view.slots.get(decider_slot)
        stamped = value if isinstance(value, Mapping) else {}
        reply = stamped.get("reply")
        candidates = list(asked.get("candidates") or [])
        pending = asked.get("collaboration_request")
        pending_role = str(pending["role"]) if isinstance(pending, Mapping) else None
        errors = choice_errors(reply, candidates, role_choices(spec), pending_role, False)
        if errors:
            return self._fallback(view, spec, errors)
        assert isinstance(reply, Mapping)
        base = {
            "kind": "choice",
            "turn": asked.get("turn"),
            "candidates": candidates,
            "choice": reply.get("next"),
            "role": reply.get("role") or None,
            "notes": str(reply.get("notes") or ""),
            "showrunner_reason": str(reply.get("reason") or ""),
            "tier1_sha256": stamped.get("tier1_sha256"),
            "tier2_sha256": stamped.get("tier2_sha256"),
            "fallback": False,
        }
        said = str(reply.get("reason") or "").strip()
        if isinstance(pending, Mapping):
            base["collaboration"] = reply.get("collaboration")
            if reply.get("collaboration") == "approve" and spec.collaborator:
                return self._collaborate(view, spec, pending, base, said)
        if reply.get("next") == ASK_PERSON:
            return FailRun(
                f"the Showrunner asks a person: {said or 'no reason given'}",
                outcome=HUMAN_INPUT,
                loop={**base, "choice": ASK_PERSON},
            )
        return self._run(view, spec, str(reply["next"]), reply.get("role"), base, said)

    def _run(
        self,
        view: RunView,
        spec: LoopSpec,
        step_id: str,
        role: Any,
        loop: Mapping[str, Any],
        said: str,
    ) -> RunStep:
        recipe = view.recipe
        entry = spec.library_step(step_id)
        assert entry is not None
        chosen = str(role) if role and role != entry.recommended_role else None
        additions = [_describe(spec, view, step_id), *self._additions(view, spec, step_id)]
        notes = str(loop.get("notes") or "").strip()
        if notes:
            additions.insert(1, f"<showrunner_notes>\n{notes}\n</showrunner_notes>")
        reason = f"the Showrunner chose '{step_id}'" + (f": {said}" if said else "")
        if loop.get("fallback"):
            reason = f"fallback to the typical flow: '{step_id}'"
        return RunStep(
            _index(recipe, step_id),
            Overrides(prompt_additions=tuple(additions), role=chosen),
            reason=reason,
            loop={**loop, "choice": step_id},
        )

    def _additions(self, view: RunView, spec: LoopSpec, step_id: str) -> list[str]:
        """What the chosen step is told besides its inputs: a failing gate's findings when
        it is the step the gate sent back to (or the gate names none), and an approved
        collaborator's contribution asked for by this step since it last ran."""
        recipe = view.recipe
        out: list[str] = []
        gate = last_gate(spec, recipe, view)
        entry = spec.library_step(step_id)
        last_own = max((i for i, p in enumerate(view.history) if p.step_id == step_id), default=-1)
        sent_back = gate is not None and not gate.passed and gate.back_to in (None, step_id)
        # The latest verdict is the loop's state until a gate judges again: a step run
        # after it (even one that ignored it) is still told its findings.
        if gate is not None and sent_back and entry and not entry.gate:
            findings = "\n".join(f"- {f}" for f in gate.findings[:40])
            out.append(f'<gate_findings gate="{gate.step}">\n{findings}\n</gate_findings>')
        for decision in view.decisions:
            loop = decision.loop or {}
            if loop.get("collaborator_for") != step_id or decision.instance_id is None:
                continue
            ran = [i for i, p in enumerate(view.history) if p.instance_id == decision.instance_id]
            if ran and ran[0] > last_own and spec.collaborator:
                slot = recipe.steps[_index(recipe, spec.collaborator)].output_slot
                text = _text_of(view.slots.get(slot))[:COLLABORATION_CHARS]
                role = loop.get("collaborator_role")
                out.append(f'<collaboration role="{role}">\n{text}\n</collaboration>')
        return out

    def _collaborate(
        self,
        view: RunView,
        spec: LoopSpec,
        pending: Mapping[str, Any],
        loop: Mapping[str, Any],
        said: str,
    ) -> RunStep:
        assert spec.collaborator is not None
        requester = str(pending["from"]).split("#")[0]
        role = str(pending["role"])
        ask = f'<collaboration_request from="{requester}">\n{pending.get("reason", "")}\n'
        ask += "</collaboration_request>"
        return RunStep(
            _index(view.recipe, spec.collaborator),
            Overrides(prompt_additions=(ask,), role=role),
            reason=f"the Showrunner approved '{requester}' asking '{role}' to help"
            + (f": {said}" if said else ""),
            loop={
                **loop,
                "choice": spec.collaborator,
                "collaborator_for": requester,
                "collaborator_role": role,
            },
        )

    def _fallback(self, view: RunView, spec: LoopSpec, errors: list[str]) -> Decision:
        """The typical flow's choice when the Showrunner gave none that can be run."""
        asked = last_turn(view.decisions)
        candidates = list(asked.get("candidates") or allowed_next(spec, view))
        gate = last_gate(spec, view.recipe, view)
        last = last_library_step(spec, view)
        failed = gate is not None and not gate.passed and gate.step == last
        back = gate.back_to if failed and gate is not None else None
        if failed and back is None:
            back = self._stalled_step(view, spec)
        choice = typical_next(candidates, spec.typical_flow, last, back)
        loop = {
            "kind": "choice",
            "turn": asked.get("turn"),
            "candidates": candidates,
            "fallback": True,
            "errors": errors[:5],
            "collaboration": "deny" if asked.get("collaboration_request") else None,
        }
        if choice is None:
            return StepsDone(
                "capped: the Showrunner gave no usable choice and no step may run",
                loop={**loop, "kind": "end", "ending": "capped"},
            )
        return self._run(view, spec, choice, None, loop, "")


def _describe(spec: LoopSpec, view: RunView, step_id: str) -> str:
    """The library step the agent is woken for, the loop's scope, and (for a gate) the
    work steps it may send back to, the last to run last."""
    entry = spec.library_step(step_id)
    assert entry is not None
    text = f'<loop_step loop="{spec.name}" step="{step_id}">\n{entry.description}\n'
    text += f"Scope: {spec.scope.summary}"
    if spec.scope.cannot:
        text += " Never: " + "; ".join(spec.scope.cannot) + "."
    text += "\n</loop_step>"
    if entry.gate:
        work = [s.step for s in spec.library if not s.gate]
        ran = [p.step_id for p in library_history(spec, view.history) if p.step_id in work]
        order = sorted(
            work, key=lambda s: max((i for i, r in enumerate(ran) if r == s), default=-1)
        )
        text += f"\n<loop_steps>{', '.join(order)}</loop_steps>"
    return text


def _text_of(value: Any) -> str:
    if isinstance(value, Mapping):
        artifact = value.get("artifact")
        if isinstance(artifact, str):
            return artifact
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1)


FLOWS.register(AdaptiveFlow())

__all__ = ["AdaptiveFlow"]
