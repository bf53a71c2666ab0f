"""Tier 1 of a Showrunner's context (seed 003): the loop registry, generated from the loop
recipes (never written by hand), and tier 2, the active loop's library and state. Both
are rendered canonically (sorted JSON), so the sha256 a turn records names exactly what
the Showrunner was shown."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controlroom.domain.canonical import preview, sha256_text
from controlroom.domain.capabilities import missing
from controlroom.domain.flow import RunView
from controlroom.domain.loop_spec import LoopSpec
from controlroom.domain.loops import (
    judge,
    last_gate,
    last_library_step,
    last_work_step,
    runs_of,
)
from controlroom.domain.recipe import Recipe

#: Characters of each slot shown in tier 2 (the Showrunner chooses; it does not do the work).
SLOT_PREVIEW_CHARS = 300
#: The latest turns shown in tier 2.
TURNS_SHOWN = 12


def registry(recipes: Iterable[Recipe]) -> dict[str, dict[str, object]]:
    """Every loop recipe's registry entry, by loop name (with the recipe that runs it)."""
    found: dict[str, dict[str, object]] = {}
    for recipe in sorted(recipes, key=lambda r: r.recipe_id):
        if recipe.loop is not None:
            found[recipe.loop.name] = {"recipe": recipe.recipe_id, **recipe.loop.registry_entry()}
    return found


def render(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)


def tier1_text(recipes: Iterable[Recipe]) -> str:
    return render(registry(recipes))


def full_definitions_text(recipes: Iterable[Recipe]) -> str:
    """Every loop recipe in full: what a Showrunner would read without the registry."""
    loops = [r for r in recipes if r.loop is not None]
    return render({r.recipe_id: r.snapshot() for r in sorted(loops, key=lambda r: r.recipe_id)})


def needs_of(entry: Mapping[str, object]) -> list[str]:
    needs = entry.get("needs")
    return [str(n) for n in needs] if isinstance(needs, list) else []


def missing_needs(
    registry_: Mapping[str, Mapping[str, object]], env: Mapping[str, str]
) -> dict[str, list[str]]:
    """Each loop's needs this install lacks (`CONTROLROOM_CAPABILITIES`), by loop name."""
    return {name: missing(needs_of(entry), env) for name, entry in registry_.items()}


def _names(entry: Mapping[str, object] | None, field: str) -> list[str]:
    value = (entry or {}).get(field)
    return [str(n) for n in value] if isinstance(value, list) else []


def propose_next(
    registry_: Mapping[str, Mapping[str, object]],
    finished_loop: str,
    ending: str,
    missing_caps: Mapping[str, Sequence[str]],
) -> tuple[str, str] | None:
    """The loop to propose when `finished_loop` has ended (`ending`: stable or capped), and
    why; None when tier 1 suggests none this install can run.

    From tier 1 only: the finished loop's `often_precedes`, in order, then the loops whose
    `often_follows` names it (by loop name). A name that is not a loop of this catalog is
    passed over; a loop whose needs are missing (`missing_caps`, by loop name) is skipped
    and the reason says so. This is what the offline Showrunner proposes; no model is asked
    for the next loop yet, so the proposal is the same for every install with the same
    recipes and capabilities."""
    precedes = _names(registry_.get(finished_loop), "often_precedes")
    follows = [
        name
        for name, entry in registry_.items()
        if name != finished_loop and finished_loop in _names(entry, "often_follows")
    ]
    candidates = [(n, f"it often precedes {n}") for n in precedes if n in registry_]
    candidates += [(n, f"{n} often follows it") for n in follows if n not in precedes]
    skipped: list[str] = []
    for name, relation in candidates:
        lacking = list(missing_caps.get(name, ()))
        if lacking:
            skipped.append(
                f"{name} skipped: it needs {', '.join(lacking)}, which this install lacks"
            )
            continue
        how = "stable" if ending == "stable" else f"{ending}, not stable (read its report first)"
        said = f"{finished_loop} ended {how}; {relation}: {registry_[name].get('purpose')}"
        return name, "; ".join([said, *skipped])
    return None


def approx_tokens(text: str) -> int:
    """About four characters a token: the measure every size here is printed in."""
    return (len(text) + 3) // 4


def tier2(
    spec: LoopSpec,
    recipe: Recipe,
    view: RunView,
    candidates: Sequence[str],
    pending: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The active loop: its library, scope, criteria and their state, the slots so far,
    the last gate's verdict, the turns so far and what may run now."""
    runs = runs_of(spec, view.history)
    gate = last_gate(spec, recipe, view)
    turns = [
        {
            k: loop.get(k)
            for k in ("turn", "choice", "role", "fallback", "stall", "collaborator_for")
            if loop.get(k) not in (None, "", False)
        }
        for d in view.decisions
        if (loop := d.loop or {}).get("kind") in ("choice", "stall")
    ]
    slots = {
        name: preview(value if isinstance(value, str) else render(value), SLOT_PREVIEW_CHARS)
        for name, value in sorted(view.slots.items())
    }
    return {
        "loop": spec.name,
        "goal": spec.purpose,
        "scope": {"summary": spec.scope.summary, "cannot": spec.scope.cannot},
        "library": [
            {
                "step": e.step,
                "description": e.description,
                "recommended_role": e.recommended_role,
                "roles": e.allowed_roles(),
                "requires": e.requires,
                "produces": e.produces,
                "gate": e.gate,
                "runs": runs.get(e.step, 0),
            }
            for e in spec.library
        ],
        "typical_flow": spec.typical_flow,
        "required_steps": spec.required_steps,
        "caps": spec.caps.model_dump(),
        "criteria": judge(spec, recipe, view),
        "iteration": sum(runs.values()),
        "last_step": last_library_step(spec, view),
        "last_work_step": last_work_step(spec, view),
        "last_gate": None
        if gate is None
        else {
            "step": gate.step,
            "verdict": "PASS" if gate.passed else "FAIL",
            "findings": list(gate.findings[:10]),
            "back_to": gate.back_to,
        },
        "slots": slots,
        "turns": turns[-TURNS_SHOWN:],
        "allowed": list(candidates),
        "collaboration_request": dict(pending) if pending else None,
    }


def sha256_of(text: str) -> str:
    return "sha256:" + sha256_text(text)
