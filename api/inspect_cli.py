"""Inspecting runs, recording nothing: `controlroom show`, `slot`, `runs`, `events`, `replay`,
`export`.

controlroom runs [--status STATUS] [--recipe RECIPE]
controlroom show RUN_ID [--request STEP_OR_REF | --trail | --follow]
controlroom slot RUN_ID SLOT
controlroom events RUN_ID
controlroom replay RUN_ID [--at VERSION] [--verify [--checkpoint FILE]]
controlroom export RUN_ID --dir DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from controlroom.api.cli_common import (
    EXIT_DONE,
    EXIT_FAILED,
    emit_json,
    open_context,
    read_views,
)
from controlroom.api.run_text import print_run, print_runs_page
from controlroom.api.runs_cli import follow_to_the_end
from controlroom.domain import untrusted_json
from controlroom.domain.errors import BadInputError, RunNotFoundError
from controlroom.engine.context import Context
from controlroom.engine.service import RunService


def cmd_show(ns: argparse.Namespace) -> int:
    """The same view as `GET /api/runs/{id}`: the runs projection, caught up."""
    ctx = open_context(ns)
    if ns.request:
        recorded = RunService(ctx).recorded_request(ns.run_id, ns.request)
        emit_json(recorded) if ns.json else _print_request(recorded)
        return EXIT_DONE
    if ns.trail:
        return _show_trail(ctx, ns)
    if ns.follow:
        return follow_to_the_end(ctx, ns.run_id, show_progress=not ns.json, as_json=ns.json)
    with read_views(ctx) as views:
        view = views.query.run(ns.run_id)
    if ns.json:
        emit_json(view.model_dump(mode="json"))
        return EXIT_DONE
    print_run(view.model_dump(mode="json"))
    from controlroom.api.loops_cli import after_loop_lines  # only a loop run's show needs it

    for line in after_loop_lines(ctx, ns.run_id, view.recipe_id):
        print(line)
    return EXIT_DONE


def _print_request(recorded: dict[str, Any]) -> None:
    """The exact request a model was sent: each message in full, then the parameters."""
    body = dict(recorded["body"])
    print(f"{recorded['ref']}  {recorded['provider']}/{recorded['model']}")
    messages = list(body.pop("messages", []))
    if "system" in body:
        messages.insert(0, {"role": "system", "content": body.pop("system")})
    for message in messages:
        print(f"\n--- {message['role']} ---\n{message['content']}")
    body.pop("model", None)
    print("\n--- parameters ---\n" + json.dumps(body, indent=2, ensure_ascii=False))


def _show_trail(ctx: Context, ns: argparse.Namespace) -> int:
    """Seed 001 PH-5: every packet and receipt of the run, in order, with actor, decision
    summary and artifacts."""
    with read_views(ctx) as views:
        trail = views.query.run_trail(ns.run_id)
    if ns.json:
        emit_json([e.model_dump(mode="json") for e in trail])
        return EXIT_DONE
    if not trail:
        print("no packets or receipts recorded for this run")
    for e in trail:
        artifacts = getattr(e, "artifacts", None) or []
        print(f"{e.at}  {e.kind:<12} {e.step_id or '':<12} {e.actor or ''}")
        print(f"    {e.summary}" + (f"  → {', '.join(artifacts)}" if artifacts else ""))
        if e.kind == "receipt" and e.excerpt:
            print(f"    {e.excerpt}")
    return EXIT_DONE


def cmd_slot(ns: argparse.Namespace) -> int:
    """A slot's full text (`GET /api/runs/{id}/cache/{slot}`): an artifact's text (JSON
    pretty-printed), a pointer's tool output."""
    from controlroom.api.limits import check_id
    from controlroom.domain.run_events import ReceiptIssued
    from controlroom.projections.models import PointerSlot

    check_id(ns.run_id, "RUN_ID")
    ctx = open_context(ns)
    with read_views(ctx) as views:
        detail = views.query.run(ns.run_id)  # no such run: its own error
        found = views.query.slot(ns.run_id, ns.slot)
    if found is None:
        known = ", ".join(detail.cache_summary) or "none yet"
        raise BadInputError(f"run {ns.run_id} has no slot '{ns.slot}' (its slots: {known})")
    if ns.json:
        emit_json(found.model_dump(mode="json"))
        return EXIT_DONE
    if isinstance(found, PointerSlot):
        receipt = next(
            (
                e
                for e in ctx.store.stream(ns.run_id)
                if isinstance(e, ReceiptIssued) and e.receipt_id == found.receipt_id
            ),
            None,
        )
        emit_json(receipt.output if receipt is not None else found.summary)
        return EXIT_DONE
    text = found.text
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            emit_json(untrusted_json.loads(stripped))
            return EXIT_DONE
        except ValueError:
            pass
    print(text, end="" if text.endswith("\n") else "\n")
    return EXIT_DONE


def cmd_runs(ns: argparse.Namespace) -> int:
    ctx = open_context(ns)
    with read_views(ctx) as views:
        rows = views.query.runs(ns.status, ns.recipe, ns.limit or None, ns.before)
        older = views.query.count_runs(ns.status, ns.recipe, rows[0].run_id) if rows else 0
        if ns.json:
            emit_json([r.model_dump(mode="json") for r in rows])
            return EXIT_DONE
        print_runs_page([r.model_dump(mode="json") for r in rows], older, views.query.state_of)
    return EXIT_DONE


def cmd_events(ns: argparse.Namespace) -> int:
    ctx = open_context(ns)
    # Existence from the raw records: the events of a damaged run must still be listable.
    if not ctx.store.recorder.select_events(ns.run_id, limit=1):
        raise RunNotFoundError(ns.run_id)
    from controlroom.eventstore.store import Damaged

    # A record that cannot be decoded is listed as damaged in its place; the rest still show.
    records = ctx.store.stream_records(ns.run_id)
    if ns.json:
        emit_json(
            [
                {
                    "version": e.originator_version,
                    "type": e.topic,
                    "damaged": e.reason,
                }
                if isinstance(e, Damaged)
                else {
                    "version": e.originator_version,
                    "type": e.type_name,
                    "timestamp": e.timestamp.isoformat(),
                    "prev_hash": e.prev_hash,
                    "event_hash": e.event_hash,
                    "data": e.payload(),
                }
                for e in records
            ]
        )
        return EXIT_DONE
    for e in records:
        if isinstance(e, Damaged):
            print(f"{e.originator_version:>4}  DAMAGED ({e.topic}): {e.reason[:120]}")
            continue
        detail = json.dumps(e.payload(), ensure_ascii=False, default=str)
        print(
            f"{e.originator_version:>4}  {e.timestamp.isoformat()}  {e.type_name:<15} {detail[:90]}"
        )
    return EXIT_DONE


def cmd_replay(ns: argparse.Namespace) -> int:
    from eventsourcing.persistence import MapperDeserialisationError

    from controlroom.projections.audit import replay, verify

    ctx = open_context(ns)
    if ns.checkpoint and not ns.verify:
        raise BadInputError("--checkpoint goes with --verify")
    if (ns.public_key or ns.key_fingerprint) and not ns.checkpoint:
        raise BadInputError("--public-key and --key-fingerprint go with --checkpoint")
    if ns.checkpoint:
        # First, and even for a run that is gone: its removal is what the checkpoint shows.
        from controlroom.api.audit_cli import print_report, trusted_key
        from controlroom.projections import checkpoints

        checkpoint = checkpoints.read(Path(ns.checkpoint))
        report = checkpoints.verify(
            ctx.store, checkpoint, trusted=trusted_key(ctx, ns), run_id=ns.run_id
        )
        if print_report(report, False, what=ns.run_id) != EXIT_DONE:
            return EXIT_FAILED
    # Existence from the raw records: a tampered stream must still be verifiable.
    last = ctx.store.recorder.select_events(ns.run_id, desc=True, limit=1)
    if not last:
        raise RunNotFoundError(ns.run_id)
    final = last[0].originator_version
    if ns.at is not None and not 1 <= ns.at <= final:
        raise BadInputError(f"--at must be a version from 1 to {final}")
    if ns.verify:
        problems = verify(ctx.store, ns.run_id)
        if problems:
            first = problems[0]
            if ns.json:
                emit_json({"ok": False, "problems": [p.__dict__ for p in problems]})
            print(
                f"verify failed at v{first.version} ({first.kind}): {first.message}",
                file=sys.stderr,
            )
            return EXIT_FAILED
        print(f"verified: {ns.run_id} hash chain intact", file=sys.stderr)
        if not ns.checkpoint:
            from controlroom.api.audit_cli import print_unanchored

            print_unanchored(ctx.store, ns.run_id)
    try:
        view = replay(ctx.store, ns.run_id, ns.at).consolidated()
    except (MapperDeserialisationError, KeyError) as exc:
        print(
            f"controlroom: error: the run's events cannot be replayed ({exc}); "
            "run with --verify to locate the damage",
            file=sys.stderr,
        )
        return EXIT_FAILED
    emit_json(view)
    return EXIT_DONE


def cmd_export(ns: argparse.Namespace) -> int:
    from controlroom.projections.audit import export_run, replay

    ctx = open_context(ns)
    run = RunService(ctx).load(ns.run_id)
    if ns.tree:
        from controlroom.projections.tree_export import export_tree

        written = export_tree(ctx.store, run, Path(ns.dir))
    else:
        written = export_run(replay(ctx.store, ns.run_id), Path(ns.dir))
    for path in written:
        print(path)
    return EXIT_DONE
