"""A run and every run below it, rolled up: how many, what they cost, the tokens they
used, how each ended, how deep the tree went (seed 004: cost and time roll up from children
to every ancestor). Light to import: the quick `show` (api/quick_reads.py) and the typed
read (projections/queries.py) walk the runs view's states with it alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: A tree is walked at most this far (runs): one step starts at most 50 children, and a
#: tree nests at most 10 deep, so a bigger walk is a damaged view, not a tree.
MAX_TREE_RUNS = 5_000

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


def tree_totals(
    state_of: Callable[[str], dict[str, Any] | None], run_id: str
) -> dict[str, Any] | None:
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
        for step in state["steps"]:
            usage = step.get("usage") or {}
            totals["input_tokens"] += int(usage.get("input_tokens") or 0)
            totals["output_tokens"] += int(usage.get("output_tokens") or 0)
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
