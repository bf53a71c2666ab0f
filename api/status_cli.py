"""`controlroom status`: the status of the pipelines (seed 002's STATUS.md), from the status

Usage and exit codes: api/status_args.py (what `--help` prints)."""

from __future__ import annotations

import argparse
import sys

from controlroom.api.cli_common import EXIT_CONFLICT, EXIT_DONE, emit_json, read_views
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.status_export import StatusExporter
from controlroom.projections.status_markdown import render_pipeline, render_status
from controlroom.projections.status_models import ExportState
from controlroom.projections.views import Views


def run_status_command(ctx: Context, ns: argparse.Namespace) -> int:
    if ns.target_id:
        from controlroom.api.limits import check_id

        check_id(ns.target_id, "TARGET_ID")
    if ns.export:
        return _export(ctx, ns)
    with read_views(ctx) as views:
        return _print(views, ns)


def _print(views: Views, ns: argparse.Namespace) -> int:
    if ns.target_id:
        detail = views.pipelines.pipeline(ns.target_id)
        if ns.json:
            emit_json(detail.model_dump(mode="json"))
        else:
            print("\n".join(render_pipeline(detail)).rstrip("\n"))
        _warn(detail.export)
        return EXIT_DONE
    position, details = views.pipelines.snapshot()
    if ns.json:
        emit_json([d.model_dump(mode="json") for d in details])
    else:
        print(render_status(details, position).rstrip("\n"))
    _warn(views.pipelines.export())
    return EXIT_DONE


def _export(ctx: Context, ns: argparse.Namespace) -> int:
    """Catch the followers up (which export what changed), then retry an export that
    failed: the user says the file may be written again."""
    views = Views.for_store(ctx.store, ctx.workspace.root)
    with views:
        followers = Followers(ctx.store, views, exporters=[])
        followers.catch_up()
        StatusExporter(ctx.store, views, ctx.workspace.root, clock=ctx.clock).catch_up(retry=True)
        followers.catch_up()  # the issue a failure opens, or closes
        state = views.pipelines.export()
        if ns.json:
            emit_json(state.model_dump(mode="json") if state else None)
        elif state is None:
            print("nothing to export: no pipeline has run yet", file=sys.stderr)
        elif state.state == "exported":
            print(f"{state.path}: exported (log position {state.position})")
        _warn(state)
        return EXIT_CONFLICT if state is not None and state.state != "exported" else EXIT_DONE


def _warn(state: ExportState | None) -> None:
    if state is not None and state.state != "exported":
        print(
            f"controlroom: warning: {state.path} is not up to date ({state.state}): "
            f"{state.problem}",
            file=sys.stderr,
        )
