"""A run tree written as seed 004's session directory (`controlroom export RUN --tree`).

Every file is a view of the events, rebuilt on each export, never read back: the event log
stays the only source of truth (seed 004 keeps state in these files; here they are what an
operator or a tool that expects the seed's layout reads).

    <dir>/.trace                      the tree's trace id
    <dir>/manifest.json               the root: outcome, tree totals, every run of the tree
    <dir>/.live-report                every event of the tree in log order, one JSON per line
    <dir>/.signals/<layer>-<name>.<status>   one per child run (done, fail, refine)
    <dir>/phases/phase-NN-<name>/     each child run: run.json, steps.jsonl, cache.json
    <dir>/sentinel/cycle-N/           a verification loop's cycles: results and fix list
    <dir>/sentinel/grade.txt, summary.json
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controlroom.domain.child_runs import ChildRunsRequested
from controlroom.domain.run import Run
from controlroom.domain.sentinel import SentinelFixed, SentinelVerified
from controlroom.eventstore.store import EventStore
from controlroom.projections.audit import export_run, replay
from controlroom.projections.run_tree import outcome_label

#: Seed 004's signal layer of a child, by what its parent's step is to it.
_LAYER_OF_CHILDREN = {"orchestrator": "exec", "coordinator": "orch", "campaign": "coord"}
_STATUS = {0: "done", 12: "done", 10: "refine"}


def export_tree(store: EventStore, root: Run, folder: Path) -> list[Path]:
    from controlroom.engine.child_policies import tree_runs

    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def write(relative: str, text: str) -> None:
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)

    runs = list(tree_runs(store, root))
    write(".trace", root.trace_id + "\n")
    lines = []
    for run in runs:
        for event in store.stream(run.id):
            lines.append(
                {
                    "at": event.timestamp.isoformat(),
                    "run_id": run.id,
                    "event": event.type_name,
                    "step_id": getattr(event, "step_id", None),
                    "instance_id": getattr(event, "instance_id", None),
                }
            )
    lines.sort(key=lambda line: str(line["at"]))
    write(".live-report", "".join(json.dumps(line) + "\n" for line in lines))
    entries = []
    for number, run in enumerate(runs):
        entry = _entry(run)
        entries.append(entry)
        if run.id == root.id:
            continue
        name = f"phase-{number:02d}-{_slug(entry['recipe_id'])}"
        written += export_run(replay(store, run.id), folder / "phases" / name)
        layer = _layer(store, run)
        status = _STATUS.get(run.outcome if run.outcome is not None else 1, "fail")
        signal = {
            "path": f"phases/{name}",
            "status": {"done": "success", "refine": "needs-refinement"}.get(status, "fail"),
            "outcome": run.outcome,
            "outcome_name": outcome_label(run.outcome),
            "created_at": entry["started_at"],
            "completed_at": entry["ended_at"],
            "trace_id": run.trace_id,
            "layer": layer,
            "name": name,
            "run_id": run.id,
        }
        body = "".join(f"{key}: {json.dumps(value)}\n" for key, value in signal.items())
        write(f".signals/{layer}-{name}.{status}", body)
    for run in runs:
        _sentinel(run, "sentinel" if run.id == root.id else f"sentinel/{run.id}", write)
    manifest = {
        "root_run_id": root.id,
        "recipe_id": root.recipe.recipe_id if root.recipe else "",
        "trace_id": root.trace_id,
        "status": root.status.value,
        "outcome": root.outcome,
        "outcome_name": outcome_label(root.outcome),
        "runs": entries,
    }
    write("manifest.json", json.dumps(manifest, indent=2) + "\n")
    return written


def _entry(run: Run) -> dict[str, Any]:
    return {
        "run_id": run.id,
        "recipe_id": run.recipe.recipe_id if run.recipe else "",
        "parent_run_id": run.origin.parent_run_id,
        "parent_step": run.origin.parent_instance_id,
        "depth": run.origin.depth,
        "status": run.status.value,
        "outcome": run.outcome,
        "outcome_name": outcome_label(run.outcome),
        "error": run.error,
        "slots": sorted(run.slot_values),
        "files": sorted(run.files_written),
        "cost_usd": run.spent.cost_usd,
        "tokens": run.spent.tokens,
        "started_at": run.created_on.isoformat() if run.created_on else None,
        "ended_at": run.modified_on.isoformat() if run.is_finished and run.modified_on else None,
    }


def _layer(store: EventStore, child: Run) -> str:
    parent = store.load(Run, child.origin.parent_run_id or "")
    instance = child.origin.parent_instance_id or ""
    if parent is None:
        return "exec"
    requests = parent.journal_of(instance, ChildRunsRequested)
    layer = requests[-1].layer if requests else "orchestrator"
    return _LAYER_OF_CHILDREN.get(layer, "exec")


def _sentinel(run: Run, base: str, write: Callable[[str, str], None]) -> None:
    checks = {r.cycle: r for i in run.journal for r in run.journal_of(i, SentinelVerified)}
    fixes = {r.cycle: r for i in run.journal for r in run.journal_of(i, SentinelFixed)}
    if not checks:
        return
    for cycle, check in sorted(checks.items()):
        results = {"passed": check.passed, "blocking": check.blocking, "report": check.output}
        write(f"{base}/cycle-{cycle}/verification-results.json", json.dumps(results, indent=2))
        fix_list = {"blocking": check.blocking, "sha256": check.fix_list_sha256}
        write(f"{base}/cycle-{cycle}/fix-list.json", json.dumps(fix_list, indent=2))
        if cycle in fixes:
            write(f"{base}/cycle-{cycle}/fixed.md", fixes[cycle].output)
    last = checks[max(checks)]
    cycles = checks
    grade = "PASS" if last.passed else "FAIL"
    write(f"{base}/grade.txt", grade + "\n")
    summary = {
        "run_id": run.id,
        "cycles": len(cycles),
        "blocking": 0 if last.passed else len(last.blocking),
        "grade": grade,
    }
    write(f"{base}/summary.json", json.dumps(summary, indent=2))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "run"
