"""An adaptive loop's turns as the run's view keeps them (`RunView.run["loop"]`), folded from
the `loop` dicts of its `FlowDecided` events (`domain/adaptive_flow.py`).

The flow records a turn in two events: the question (`kind: turn`: the criteria that hold
and the candidates the Showrunner is shown) and the answer (`kind: choice`: the step chosen,
its role and reason, or a fallback with the errors). Here they are one entry per turn, so
`show`, the dashboard and the API read a turn whole. A stall is an entry of its own (it asks
no one), and the loop's ending (`stable` or `capped`) is kept beside the turns.

Plain dicts and no pydantic: the quick reads (`api/quick_reads.py`) fold nothing but print
this state as stored.
"""

from __future__ import annotations

from typing import Any

LoopState = dict[str, Any]


def new_loop(recipe: dict[str, Any] | None) -> LoopState | None:
    """The empty loop state of a run whose recipe has a loop (None otherwise)."""
    spec = (recipe or {}).get("loop")
    if not isinstance(spec, dict):
        return None
    return {
        "name": spec.get("name") or (recipe or {}).get("recipe_id"),
        "turns": [],
        "ending": None,
    }


def fold_turn(
    loop: LoopState, event: dict[str, Any], at: str, recipe_id: str | None = None
) -> LoopState:
    """`loop` with one `FlowDecided` event's `loop` dict folded in (a run recorded before
    its recipe snapshot had a loop gets a state here, named after its recipe)."""
    turns: list[dict[str, Any]] = loop.setdefault("turns", [])
    data: dict[str, Any] = event["loop"]
    kind = data.get("kind")
    if kind == "turn":
        turns.append({**_judged(data), "at": at, "candidates": list(data.get("candidates") or [])})
    elif kind == "choice":
        entry = _asked_turn(turns, data.get("turn"))
        if entry is None:  # its question is not in the stream: the answer stands alone
            entry = {"turn": data.get("turn"), "at": at, "candidates": []}
            turns.append(entry)
        entry.update(_answer(data, event))
        entry["candidates"] = entry["candidates"] or list(data.get("candidates") or [])
    elif kind == "stall":
        turns.append(
            {
                **_judged(data),
                "at": at,
                "stall": data.get("stall"),
                "subject": data.get("subject"),
                "instance_id": event.get("instance_id"),
                "reason": event.get("reason"),
            }
        )
    elif kind == "end":
        if data.get("fallback"):  # the Showrunner's turn fell back and nothing could run
            entry = _asked_turn(turns, data.get("turn"))
            if entry is not None:
                entry.update(fallback=True, errors=list(data.get("errors") or []), choice=None)
        loop["ending"] = {
            "ending": data.get("ending"),
            "turn": data.get("turn"),
            "iteration": data.get("iteration"),
            "criteria": dict(data.get("criteria") or {}),
            "held": data.get("held"),
            "reason": event.get("reason"),
            "at": at,
        }
    if not loop.get("name"):
        loop["name"] = recipe_id
    return loop


def _judged(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "turn": data.get("turn"),
        "iteration": data.get("iteration"),
        "criteria": dict(data.get("criteria") or {}),
        "held": data.get("held"),
    }


def _asked_turn(turns: list[dict[str, Any]], number: object) -> dict[str, Any] | None:
    """The latest asked turn of that number still without an answer."""
    for entry in reversed(turns):
        answered = "choice" in entry or "candidates" not in entry
        if entry.get("turn") == number and not answered:
            found: dict[str, Any] = entry
            return found
    return None


def _answer(data: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    fallback = bool(data.get("fallback"))
    answer = {
        "choice": data.get("choice"),
        "role": data.get("role"),
        "reason": event.get("reason") if fallback else data.get("showrunner_reason"),
        "fallback": fallback,
        "instance_id": event.get("instance_id"),
    }
    if fallback:
        answer["errors"] = list(data.get("errors") or [])
    for key in ("notes", "collaboration", "collaborator_for", "collaborator_role"):
        if data.get(key):
            answer[key] = data[key]
    return answer
