"""A run and every run below it, rolled up: how many, what they cost, the tokens they
used, how each ended, how deep the tree went (seed 004: cost and time roll up from children
to every ancestor); a fork family (the run forks were first taken from and every fork below
it) and an eval's forks, each run's own spend summed: a fork's copies of its source's steps
(`copied_cost_usd`, steps marked `copied`) were paid by the source, and are counted there
only. Light to import: the quick `show` (api/quick_reads.py) and the typed
read (projections/queries.py) walk the runs view's states with it alike."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

#: A tree is walked at most this far (runs): one step starts at most 50 children, and a
#: tree nests at most 10 deep, so a bigger walk is a damaged view, not a tree.
MAX_TREE_RUNS = 5_000
#: A fork's source chain is followed at most this far up to its family's root.
MAX_FORK_DEPTH = 1_000

StateOf = Callable[[str], dict[str, Any] | None]

_NAMES = {
    0: "SUCCESS",
    1: "FAILURE",
    2: "DEPTH_EXCEEDED",
    3: "HUMAN_INPUT",
    10: "NEEDS_REFINEMENT",
    11: "NEEDS_ESCALATION",
    12: "PARTIAL_SUCCESS",
    20: "INTERRUPTED",
    21: "TIMEOUT",
}


def outcome_label(code: int | None) -> str:
    if code is None:
        return "-"
    return _NAMES.get(code, f"code {code}")


def tree_totals(state_of: StateOf, run_id: str) -> dict[str, Any] | None:
    """The rolled-up totals of `run_id`'s tree from each run's folded state (`RunView.
    to_state()`); None for a run that started no child."""
    root = state_of(run_id)
    if root is None or not root["run"].get("children"):
        return None
    totals: dict[str, Any] = {
        "runs": 0,
        "cost_usd": 0.0,
        "input_tokens": 0,
        "output_tokens": 0,
        "outcomes": {},
        "deepest": 0,
    }
    queue: list[tuple[dict[str, Any], int]] = [(root, 0)]
    seen = {run_id}
    while queue and totals["runs"] < MAX_TREE_RUNS:
        state, depth = queue.pop(0)
        run = state["run"]
        totals["runs"] += 1
        totals["cost_usd"] = round(totals["cost_usd"] + (run.get("cost_usd") or 0.0), 9)
        input_tokens, output_tokens = own_tokens(state)
        totals["input_tokens"] += input_tokens
        totals["output_tokens"] += output_tokens
        label = outcome_label(run.get("outcome")) if "outcome" in run else run["status"]
        totals["outcomes"][label] = totals["outcomes"].get(label, 0) + 1
        totals["deepest"] = max(totals["deepest"], depth)
        for child in run.get("children") or []:
            if child["run_id"] in seen:
                continue
            seen.add(child["run_id"])
            found = state_of(child["run_id"])
            if found is not None:
                queue.append((found, depth + 1))
    return totals


def own_tokens(state: dict[str, Any]) -> tuple[int, int]:
    """The input and output tokens of the replies the run kept, its steps copied from a
    fork's source left out. A T1 step's micro-steps count too, but not its "finding": that
    is the step's own reply, already in the step's usage."""
    input_tokens = output_tokens = 0
    for step in state["steps"]:
        if step.get("copied"):
            continue
        micro = [m for m in step.get("micro_steps", []) if m.get("micro_step") != "finding"]
        for usage in [step.get("usage")] + [m.get("usage") for m in micro]:
            usage = usage or {}
            input_tokens += int(usage.get("input_tokens") or 0)
            output_tokens += int(usage.get("output_tokens") or 0)
    return input_tokens, output_tokens


def _spend() -> dict[str, Any]:
    return {"cost_usd": 0.0, "input_tokens": 0, "output_tokens": 0, "copied_cost_usd": 0.0}


def _add_spend(totals: dict[str, Any], state: dict[str, Any]) -> None:
    run = state["run"]
    totals["cost_usd"] = round(totals["cost_usd"] + (run.get("cost_usd") or 0.0), 9)
    copied = run.get("copied_cost_usd") or 0.0
    totals["copied_cost_usd"] = round(totals["copied_cost_usd"] + copied, 9)
    input_tokens, output_tokens = own_tokens(state)
    totals["input_tokens"] += input_tokens
    totals["output_tokens"] += output_tokens


def family_totals(state_of: StateOf, run_id: str) -> dict[str, Any] | None:
    """The fork family `run_id` belongs to, from each run's folded state: up its sources
    to the first (the root), then over every fork below it, breadth first, each run's own
    spend summed. None for a run that is neither a fork nor forked from."""
    state = state_of(run_id)
    if state is None or not (state["run"].get("forked_from") or state["run"].get("forks")):
        return None
    root_id, root, seen = run_id, state, {run_id}
    for _ in range(MAX_FORK_DEPTH):
        source = (root["run"].get("forked_from") or {}).get("run_id")
        if not source or source in seen:
            break
        found = state_of(source)
        if found is None:  # a source no longer known: the family starts at its fork
            break
        seen.add(source)
        root_id, root = source, found
    totals: dict[str, Any] = {"root_run_id": root_id, "runs": 0, **_spend()}
    queue, listed = [root], {root_id}
    while queue and totals["runs"] < MAX_TREE_RUNS:
        current = queue.pop(0)
        totals["runs"] += 1
        _add_spend(totals, current)
        for fork in current["run"].get("forks") or []:
            if fork["run_id"] in listed:
                continue
            listed.add(fork["run_id"])
            found = state_of(fork["run_id"])
            if found is not None:
                queue.append(found)
    return totals


def eval_totals(state_of: StateOf, run_id: str) -> dict[str, Any] | None:
    """An eval's forks (the run's `eval_forks`), each fork's own spend summed; None for a
    run that ran no fork as an eval."""
    state = state_of(run_id)
    listed = (state or {"run": {}})["run"].get("eval_forks") or []
    if not listed:
        return None
    totals: dict[str, Any] = {"forks": 0, **_spend()}
    for fork in listed[:MAX_TREE_RUNS]:
        found = state_of(fork["run_id"])
        if found is not None:
            totals["forks"] += 1
            _add_spend(totals, found)
    return totals


def rollups(view: Mapping[str, Any], state_of: StateOf, run_id: str) -> dict[str, Any]:
    """The totals that apply to a run, by what its view lists: `tree` with children,
    `family` for a fork or a run forked from, `eval` for an eval that ran forks."""
    found = {
        "tree": tree_totals(state_of, run_id) if view.get("children") else None,
        "family": (
            family_totals(state_of, run_id)
            if view.get("forked_from") or view.get("forks")
            else None
        ),
        "eval": eval_totals(state_of, run_id) if view.get("eval_forks") else None,
    }
    return {key: value for key, value in found.items() if value is not None}


def add_totals(view: dict[str, Any], state_of: StateOf, run_id: str) -> dict[str, Any]:
    """The consolidated view with its rolled-up totals (`rollups`)."""
    view.update(rollups(view, state_of, run_id))
    return view
