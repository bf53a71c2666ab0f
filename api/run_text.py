"""A run and the list of runs as `controlroom show` and `runs` print them, from the views'
JSON shapes (`RunDetail`, `RunSummary` dumped, or the fold's own dicts): one printer for the
typed reads and the quick ones (api/quick_reads.py), so both always print alike."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from controlroom.api.loop_text import loop_lines
from controlroom.engine.ports import owner_is_gone
from controlroom.projections.run_tree import outcome_label


def print_run(view: dict[str, Any]) -> None:
    print(
        f"{view['run_id']}  {view['recipe_id']}  {view['status']}"
        f"  step {view['current_step_index'] + 1}/{view['total_steps']}"
    )
    stalled = stall_note(view)
    if stalled:
        print(stalled)
    print(f"task: {view['task']['description']}")
    print(
        f"created {view['created_at']}  updated {view['updated_at']}"
        f"  completed {view.get('completed_at') or '-'}"
    )
    for step in view["steps"]:
        who = step.get("tool") or step.get("agent_archetype") or step.get("kind")
        spent = f" ${step['spent_usd']:.4f}" if step.get("spent_usd") else ""
        print(
            f"  {step['status']:>9}  {step['phase']}  {step.get('instance_id') or step['step_id']}"
            f" ({who}){spent} → {step['output_slot']}: {(step.get('output_preview') or '')[:70]}"
        )
    parent = view.get("parent")
    if parent:
        print(
            f"parent: {parent['run_id']} at '{parent['instance_id']}' (root "
            f"{parent['root_run_id']}, depth {parent['depth']} of {parent.get('max_depth')})"
        )
    source = view.get("forked_from")
    if source:
        print(f"forked from: {source['run_id']} at step '{source['step']}'")
    for fork in view.get("forks") or []:
        print(f"forked as: {fork['run_id']} from step '{fork['step']}'")
    for child in view.get("children") or []:
        ended = outcome_label(child.get("outcome")) if child.get("outcome") is not None else ""
        again = f" attempt {child['attempt']}" if child["attempt"] > 1 else ""
        print(
            f"  child {child['run_id']}  {child['recipe_id']}  {child['status']} {ended}"
            f"  ← {child['instance_id']}{again}".rstrip()
        )
    tree = view.get("tree")
    if tree:
        ends = ", ".join(f"{n} {label}" for label, n in sorted(tree["outcomes"].items()))
        print(
            f"tree: {tree['runs']} runs, {tree['deepest']} level(s) below, "
            f"${tree['cost_usd']:.4f}, {tree['input_tokens']}+{tree['output_tokens']} tokens"
            f" ({ends})"
        )
    family = view.get("family")
    if family:
        print(
            f"fork family: {family['runs']} runs, ${family['cost_usd']:.4f}, "
            f"{family['input_tokens']}+{family['output_tokens']} tokens "
            f"(root {family['root_run_id']})"
        )
    if view.get("forked_from"):
        print(f"copied from source: ${view.get('copied_cost_usd') or 0.0:.4f} (not paid again)")
    for fork in view.get("eval_forks") or []:
        print(f"eval fork: {fork['run_id']} of {fork['source_run_id']} from step '{fork['step']}'")
    paid = view.get("eval")
    if paid:
        print(
            f"eval: {paid['forks']} forks, ${paid['cost_usd']:.4f}, "
            f"{paid['input_tokens']}+{paid['output_tokens']} tokens (the forks' own; "
            f"${paid['copied_cost_usd']:.4f} copied from their sources, not paid again)"
        )
    for rung in view.get("ladder") or []:
        print(f"  ladder {rung['kind']:<9} {rung.get('instance_id') or '-'}: {rung['reason']}")
    if view.get("loop"):
        print("\n".join(loop_lines(view["loop"])))
    if view.get("cost_usd"):
        print(f"cost: ${view['cost_usd']:.4f} (every reply paid for, rejected ones included)")
    wait = view.get("waiting_for_person")
    if wait:
        print(
            f"waiting for a person ({wait.get('owner') or 'user'}) at '{wait['instance_id']}': "
            f'controlroom issues answer {wait.get("issue_id")} "RESOLUTION"'
        )
    if view.get("dod"):
        for r in view["dod"]["results"]:
            print(f"  DoD {'✓' if r['passed'] else '✗'} {r['detail']}")
    if view.get("error"):
        print(f"error: {view['error']}")
    if view.get("outcome") not in (None, 0):
        print(f"outcome: {view['outcome']} {outcome_label(view['outcome'])}")
    if view.get("damage"):
        print(f"damaged: {view['damage']}")
        print(f"  locate it with `controlroom replay {view['run_id']} --verify`")


#: A run's folded state by its id (None: no such run): what a list row does not carry.
StateOf = Callable[[str], dict[str, Any] | None]


def print_runs(rows: list[dict[str, Any]], state_of: StateOf | None = None) -> None:
    if not rows:
        print("no runs")
    for r in rows:
        note = f"  ({r['damage']})" if r.get("damage") else ""
        stalled = stall_note(r)
        if stalled and state_of is not None:
            # a row does not say whether the run waits on a person: read its state, for
            # the few rows that look stalled only
            state = state_of(r["run_id"]) or {}
            wait = (state.get("run") or {}).get("waiting_for_person")
            if wait:
                stalled = stall_note({**r, "waiting_for_person": wait})
        if stalled:
            note = f"  ({stalled})"
        print(
            f"{r['run_id']}  {r['status']:<9}  {r['recipe_id']:<26}  {r['created_at']}"
            f"  {r['description'][:40]}{note}"
        )


def print_runs_page(
    rows: list[dict[str, Any]], older: int, state_of: StateOf | None = None
) -> None:
    """A page of runs, and when older ones are left out, how many and how to see them."""
    print_runs(rows, state_of)
    if rows and older:
        print(
            f"({older} older {'run' if older == 1 else 'runs'} not shown: "
            f"`controlroom runs --before {rows[0]['run_id']}`; all: `--limit 0`)"
        )


def stall_note(run: dict[str, Any]) -> str | None:
    """What to say of a running run that is not moving on by itself, and what to do."""
    stalled = not_advancing(run)
    if stalled is None:
        return None
    wait = run.get("waiting_for_person")
    if wait:
        # its process ended on purpose: the run waits for an answer, not for a process
        return (
            f"waiting for a person ({wait.get('owner') or 'user'}): answer with "
            f'`controlroom issues answer {wait.get("issue_id")} "RESOLUTION"`'
        )
    if not run.get("owner"):  # queued, or released by a worker that stopped
        return (
            "queued: no process holds it; a worker takes it (`controlroom worker`), or run "
            f"it here with `controlroom resume {run['run_id']}`"
        )
    return (
        f"not advancing: {stalled}; a worker takes it over (`controlroom worker`), or "
        f"continue it here with `controlroom resume {run['run_id']}`"
    )


def not_advancing(run: dict[str, Any]) -> str | None:
    """Why a running run is not moving on by itself (None while something holds it): no
    process claims it, its process is gone (killed), or its lease ran out."""
    if run["status"] != "running":
        return None
    owner = run.get("owner")
    if owner is None:
        return "no process holds it"
    if owner_is_gone(owner):
        return f"its process {owner} is gone"
    lease = run.get("lease_expires_at")
    if lease and datetime.fromisoformat(lease) < datetime.now(UTC):
        return f"the lease of {owner} ran out at {lease}"
    return None
