"""The "what if" commands: `replay-test` (recorded runs as regression tests) and `diff`
(two runs compared step by step)."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from controlroom.api.cli_common import (
    EXIT_DONE,
    EXIT_FAILED,
    STATUS_EXIT,
    emit_json,
    parse_args_kv,
    read_views,
)
from controlroom.api.limits import check_id
from controlroom.domain.errors import BadInputError
from controlroom.domain.eval_step import MAX_AT_ONCE, MAX_SOURCES
from controlroom.engine.context import Context
from controlroom.engine.replay_test import ReplayReport, replay_test
from controlroom.engine.run_diff import diff_runs
from controlroom.engine.service import RunService


def _replay_one(ctx: Context, run_id: str, keep: Path | None) -> ReplayReport:
    if keep is not None:
        if (keep / run_id).exists():
            raise BadInputError(f"--keep: {keep / run_id} exists already")
        keep.mkdir(parents=True, exist_ok=True)
        return asyncio.run(replay_test(ctx, run_id, keep / run_id))
    folder = Path(tempfile.mkdtemp(prefix="controlroom-replay-"))
    try:
        return asyncio.run(replay_test(ctx, run_id, folder / "workspace"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def cmd_replay_test(ctx: Context, ns: argparse.Namespace) -> int:
    for run_id in ns.run_ids:
        check_id(run_id, "RUN")
    keep = Path(ns.keep) if ns.keep else None
    reports = [_replay_one(ctx, run_id, keep) for run_id in ns.run_ids]
    if ns.json:
        emit_json(
            {"passed": all(r.passed for r in reports), "runs": [r.to_json() for r in reports]}
        )
    else:
        for report in reports:
            print("\n".join(report.lines()))
        failed = sum(not r.passed for r in reports)
        print(f"{len(reports) - failed} passed, {failed} failed")
    return EXIT_DONE if all(r.passed for r in reports) else EXIT_FAILED


def cmd_diff(ctx: Context, ns: argparse.Namespace) -> int:
    for run_id in (ns.run_a, ns.run_b):
        check_id(run_id, "RUN")
    diff = diff_runs(RunService(ctx), ns.run_a, ns.run_b)
    if ns.changed:
        diff.steps = [s for s in diff.steps if s.changed]
    if ns.json:
        emit_json(diff.to_json())
    else:
        print("\n".join(diff.lines()))
    return EXIT_DONE


def _pairs(values: list[str], option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key.strip() or not rest.strip():
            raise BadInputError(f"{option} '{value[:80]}' is not KEY=VALUE")
        pairs[key.strip()] = rest.strip()
    return pairs


def cmd_fork(ctx: Context, ns: argparse.Namespace) -> int:
    from controlroom.engine.fork import ForkRequest, fork

    check_id(ns.from_step, "--from")
    request = ForkRequest(
        source_run_id=ns.run_id,
        from_step=ns.from_step,
        prompt_files={k: Path(v) for k, v in _pairs(ns.prompt_file, "--prompt-file").items()},
        models=_pairs(ns.model, "--model"),
        args=parse_args_kv(ns.arg),
    )
    run = asyncio.run(fork(ctx, request))
    if ns.json:
        emit_json(
            {
                "run_id": run.id,
                "status": str(run.status),
                "source_run_id": ns.run_id,
                "from_step": ns.from_step,
                "error": run.error,
            }
        )
    else:
        print(f"{run.id}: {run.status} (forked from {ns.run_id} at step '{ns.from_step}')")
        if run.error:
            print(f"  {run.error}")
        print(f"compare: controlroom diff {ns.run_id} {run.id} -w {ns.workspace}", file=sys.stderr)
    return STATUS_EXIT.get(run.status, EXIT_FAILED)


def _selected(ctx: Context, ns: argparse.Namespace) -> list[str]:
    """The runs an eval forks: named, from an analytics query, or the latest matching."""
    if ns.run:
        for run_id in ns.run:
            check_id(run_id, "--run")
        return list(dict.fromkeys(ns.run))
    if not 1 <= ns.last <= MAX_SOURCES:
        raise BadInputError(f"--last must be from 1 to {MAX_SOURCES}")
    if ns.runs_sql:
        from controlroom.projections.analytics import AnalyticsProjection

        with AnalyticsProjection.for_workspace(
            ctx.store, ctx.workspace.root, ctx.settings.analytics
        ) as analytics:
            analytics.catch_up()
            result = analytics.query(ns.runs_sql)
        ids = [str(row[0]) for row in result.rows if row and isinstance(row[0], str)]
        return list(dict.fromkeys(ids))[: ns.last]
    with read_views(ctx) as views:
        status = None if ns.status == "any" else ns.status
        rows = views.query.runs(status=status, recipe_id=ns.recipe)
    rows = [r for r in rows if r.recipe_id != "eval"]
    return [r.run_id for r in reversed(rows)][: ns.last]


def cmd_eval(ctx: Context, ns: argparse.Namespace) -> int:
    from controlroom.engine.service import RunRequest

    texts = {}
    for prompt_type, file in _pairs(ns.prompt_file, "--prompt-file").items():
        path = Path(file)
        if not path.is_file():
            raise BadInputError(f"--prompt-file: {file} is not a file")
        if prompt_type not in ctx.prompts.prompt_types():
            raise BadInputError(f"--prompt-file: unknown prompt type '{prompt_type}'")
        texts[prompt_type] = path.read_text(encoding="utf-8")
    models = _pairs(ns.model, "--model")
    for choice in models.values():
        ctx.agents.check_model(choice)
    if not texts and not models:
        raise BadInputError("name a change: --prompt-file TYPE=FILE or --model ROLE=P:M")
    if not 1 <= ns.at_once <= MAX_AT_ONCE:
        raise BadInputError(f"--at-once must be from 1 to {MAX_AT_ONCE}")
    sources = _selected(ctx, ns)
    if not sources:
        raise BadInputError("no run matches: nothing to evaluate")
    args: dict[str, Any] = {"sources": sources, "prompt_texts": texts, "models": models,
                            "at_once": ns.at_once}  # fmt: skip
    what = ", ".join([*texts, *models])
    service = RunService(ctx)
    request = RunRequest(
        "eval", args, description=f"eval of {what} over {len(sources)} run(s)", is_recipe_id=True
    )
    run = asyncio.run(service.execute(service.start(request)))
    with read_views(ctx, after_command=True):
        pass  # the policies react to the forks' endings (an issue for a failed fork)
    report = run.slot_texts.get("eval_report", "")
    path = ctx.workspace.root / "control-room-reports" / "evals" / f"{run.id}.md"
    if ns.json:
        emit_json({"run_id": run.id, "status": str(run.status), "sources": sources,
                   "report": str(path) if path.exists() else None, "error": run.error})  # fmt: skip
    else:
        if not ns.quiet:
            print(report.rstrip())
        if path.exists():
            print(f"report: {path}")
        print(f"{run.id}: {run.status}" + (f" — {run.error}" if run.error else ""))
    return EXIT_DONE if run.status == "done" else 1
