"""What a loop's code decides without any model (seed 003): which steps the Showrunner may
choose next, which stabilization criteria hold, whether the loop has stalled, which
collaboration waits for an answer, and the typical flow's own choice (the fallback, and
what the offline Showrunner answers). Pure functions of the recipe and the run's view.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controlroom.domain.dod import evaluate_dod
from controlroom.domain.flow import PastDecision, Performed, RunView
from controlroom.domain.gates import read_verdict
from controlroom.domain.loop_spec import (
    DodHolds,
    GatePassed,
    LoopSpec,
    NoBlockingFindings,
    UnchangedSinceLastPass,
    criterion_name,
)
from controlroom.domain.recipe import DodCheck, FileExists, Recipe

#: The pseudo-choice a Showrunner may answer besides a step id.
ASK_PERSON = "ask_person"


def loop_of(recipe: Recipe) -> LoopSpec:
    if recipe.loop is None:
        raise ValueError(f"recipe '{recipe.recipe_id}' declares no loop")
    return recipe.loop


def library_history(spec: LoopSpec, history: Sequence[Performed]) -> list[Performed]:
    """The library step instances that finished, in order (phase A, the Showrunner's turns
    and collaborators left out)."""
    steps = {s.step for s in spec.library}
    return [p for p in history if p.step_id in steps]


def runs_of(spec: LoopSpec, history: Sequence[Performed]) -> dict[str, int]:
    runs = {s.step: 0 for s in spec.library}
    for performed in library_history(spec, history):
        runs[performed.step_id] += 1
    return runs


def _written(slots: Mapping[str, Any], name: str) -> bool:
    value = slots.get(name)
    return value is not None and value != ""


def allowed_next(spec: LoopSpec, view: RunView) -> list[str]:
    """The steps the Showrunner may choose now, typical flow first: every library step whose
    required slots are written and which is under its repeat cap (once, if it cannot
    iterate). A step outside this list is never run, whatever the Showrunner answers."""
    runs = runs_of(spec, view.history)
    cap = spec.caps.max_repeats_per_step
    order = [*spec.typical_flow, *[s.step for s in spec.library if s.step not in spec.typical_flow]]
    allowed = []
    for step_id in order:
        entry = spec.library_step(step_id)
        if entry is None or step_id in allowed:
            continue
        limit = cap if entry.can_iterate else 1
        if runs[step_id] >= limit:
            continue
        if all(_written(view.slots, slot) for slot in entry.requires):
            allowed.append(step_id)
    return allowed


@dataclass(frozen=True)
class GateReading:
    step: str
    passed: bool
    findings: tuple[str, ...]
    back_to: str | None


def last_gate(spec: LoopSpec, recipe: Recipe, view: RunView) -> GateReading | None:
    """The latest verdict a gate step of the library gave (fail-closed reading)."""
    gates = {s.step for s in spec.library if s.gate}
    for performed in reversed(view.history):
        if performed.step_id in gates:
            slot = recipe.steps[performed.index].output_slot
            value = view.slots.get(slot)
            verdict = read_verdict(value)
            back = value.get("back_to") if isinstance(value, Mapping) else None
            return GateReading(
                performed.step_id,
                verdict.passed,
                verdict.findings,
                str(back) if isinstance(back, str) and back else None,
            )
    return None


def _position(history: Sequence[Performed], step_ids: set[str]) -> int:
    found = [i for i, p in enumerate(history) if p.step_id in step_ids]
    return found[-1] if found else -1


def judge(spec: LoopSpec, recipe: Recipe, view: RunView) -> dict[str, bool]:
    """Each stabilization criterion, held or not, computed from recorded slots and
    verdicts (never from the Showrunner's opinion); `required_steps_ran` is always one."""
    runs = runs_of(spec, view.history)
    held = {"required_steps_ran": all(runs.get(s, 0) > 0 for s in spec.required_steps)}
    work = {s.step for s in spec.library if not s.gate}
    for criterion in spec.stabilization:
        name = criterion_name(criterion)
        if isinstance(criterion, GatePassed):
            gate_at = _position(view.history, {criterion.gate})
            fresh = gate_at > _position(view.history, work)
            slot = _slot_of(recipe, criterion.gate)
            value = view.slots.get(slot) if slot else None
            held[name] = gate_at >= 0 and fresh and read_verdict(value).passed
        elif isinstance(criterion, NoBlockingFindings):
            held[name] = _no_blocking(view.slots.get(criterion.slot), criterion.field)
        elif isinstance(criterion, UnchangedSinceLastPass):
            hashes = _slot_hashes(spec, recipe, view.history, criterion.slot)
            held[name] = len(hashes) >= 2 and hashes[-1] == hashes[-2]
        elif isinstance(criterion, DodHolds):
            checks: list[DodCheck] = [c for c in recipe.dod if not isinstance(c, FileExists)]
            results = evaluate_dod(checks, view.slots, {}, lambda _path: True)
            held[name] = all(r.passed for r in results)
    return held


def _slot_of(recipe: Recipe, step_id: str) -> str | None:
    return next((s.output_slot for s in recipe.steps if s.step_id == step_id), None)


def _slot_hashes(
    spec: LoopSpec, recipe: Recipe, history: Sequence[Performed], slot: str
) -> list[str]:
    writers = {s.step_id for s in recipe.steps if s.output_slot == slot}
    return [p.output_hash for p in library_history(spec, history) if p.step_id in writers]


def _no_blocking(value: Any, field: str) -> bool:
    for part in field.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False
        value = value[part]
    if not isinstance(value, list):
        return False
    return all(isinstance(item, Mapping) and item.get("blocking") is False for item in value)


def progress(spec: LoopSpec, view: RunView, held: Mapping[str, bool]) -> int:
    """How far the loop has come: the criteria that hold, plus the required steps that
    have run (a loop's first pass is progress before any criterion can hold)."""
    runs = runs_of(spec, view.history)
    return sum(held.values()) + sum(1 for s in spec.required_steps if runs.get(s, 0) > 0)


def stall(spec: LoopSpec, view: RunView, held_now: int) -> str | None:
    """Why the loop has stalled, or None: the step that just ran wrote what it wrote the
    time before (a gate: the same findings twice), or `stall_limit` turns went by without
    its progress (`progress`) growing. Only what happened since the last stall counts."""
    done = library_history(spec, view.history)
    if done and done[-1] is view.history[-1]:
        last = done[-1]
        before = [p for p in done[:-1] if p.step_id == last.step_id]
        if before and last.output_hash and before[-1].output_hash == last.output_hash:
            entry = spec.library_step(last.step_id)
            what = "the same findings" if entry is not None and entry.gate else "the same output"
            return (
                f"'{last.instance_id}' gave {what} as '{before[-1].instance_id}' "
                f"({last.output_hash[:19]}…)"
            )
    turns = _turns_since_stall(view)
    helds = [int(t.get("progress", t.get("held", 0))) for t in turns] + [held_now]
    limit = spec.caps.stall_limit
    if len(helds) > limit and max(helds[-limit:]) <= max(helds[:-limit]):
        return f"{limit} turn(s) without progress (no criterion or required step gained)"
    return None


def _turns_since_stall(view: RunView) -> list[Mapping[str, Any]]:
    turns: list[Mapping[str, Any]] = []
    for decision in view.decisions:
        loop = decision.loop or {}
        if loop.get("stall"):
            turns = []
        elif loop.get("kind") == "turn":
            turns.append(loop)
    return turns


@dataclass(frozen=True)
class CollaborationRequest:
    requester: str
    requester_instance: str
    role: str
    reason: str


def pending_collaboration(
    spec: LoopSpec, recipe: Recipe, view: RunView
) -> CollaborationRequest | None:
    """The collaboration the work step that just finished asked for (its reply's
    `collaboration` field), waiting for the Showrunner's approval or denial."""
    done = library_history(spec, view.history)
    if not done or done[-1] is not view.history[-1]:
        return None
    last = done[-1]
    entry = spec.library_step(last.step_id)
    if entry is None or entry.gate:
        return None
    value = view.slots.get(recipe.steps[last.index].output_slot)
    asked = value.get("collaboration") if isinstance(value, Mapping) else None
    if not isinstance(asked, Mapping) or not isinstance(asked.get("role"), str):
        return None
    return CollaborationRequest(
        last.step_id, last.instance_id, str(asked["role"]), str(asked.get("reason") or "")
    )


def typical_next(
    candidates: Sequence[str],
    typical_flow: Sequence[str],
    last_step: str | None,
    back_to: str | None,
) -> str | None:
    """The typical flow's choice: the step a failing gate names, else the step after the
    last one run (in typical-flow order, wrapping round), skipping what is not allowed."""
    if back_to is not None and back_to in candidates:
        return back_to
    if not typical_flow:
        return candidates[0] if candidates else None
    start = typical_flow.index(last_step) + 1 if last_step in typical_flow else 0
    for offset in range(len(typical_flow)):
        step = typical_flow[(start + offset) % len(typical_flow)]
        if step in candidates:
            return step
    return candidates[0] if candidates else None


def last_turn(decisions: Sequence[PastDecision]) -> Mapping[str, Any]:
    """The latest turn the flow asked the Showrunner (its candidates, a pending
    collaboration); empty before the first."""
    for decision in reversed(decisions):
        loop = decision.loop or {}
        if loop.get("kind") == "turn":
            return loop
    return {}


def last_work_step(spec: LoopSpec, view: RunView) -> str | None:
    """The latest library step that ran and is not a gate."""
    for performed in reversed(library_history(spec, view.history)):
        entry = spec.library_step(performed.step_id)
        if entry is not None and not entry.gate:
            return performed.step_id
    return None


def last_library_step(spec: LoopSpec, view: RunView) -> str | None:
    done = library_history(spec, view.history)
    return done[-1].step_id if done else None


def epilogue(spec: LoopSpec, recipe: Recipe) -> list[int]:
    """The phase B steps outside the loop (not its decider, collaborator or library): they
    run in order once the loop is stable (write its report, apply its work)."""
    inside = {spec.decider, spec.collaborator, *[s.step for s in spec.library]}
    start = len(recipe.phase_a)
    return [start + i for i, s in enumerate(recipe.phase_b) if s.step_id not in inside]
