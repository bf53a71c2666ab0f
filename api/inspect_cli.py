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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controlroom.api.cli_common import (
    EXIT_DONE,
    EXIT_FAILED,
    emit_json,
    open_context,
    read_views,
)
from controlroom.api.runs_cli import follow_to_the_end
from controlroom.domain import untrusted_json
from controlroom.domain.errors import BadInputError, RunNotFoundError
from controlroom.engine.context import Context
from controlroom.engine.ports import owner_is_gone
from controlroom.engine.service import RunService
from controlroom.projections.models import RUN_STATUSES, RunDetail, RunSummary


def add_slot(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("slot", parents=[common], help="print one slot of a run in full")
    p.add_argument("run_id")
    p.add_argument("slot")
    p.set_defaults(func=cmd_slot)


def add_show(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("show", parents=[common], help="the consolidated view of a run")
    p.add_argument("run_id")
    p.add_argument(
        "--request",
        metavar="STEP_OR_REF",
        help="show the exact request an agent step sent (system, user, parameters)",
    )
    p.add_argument(
        "--trail", action="store_true", help="the run's task packets and receipts, in order"
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="show its progress as it is made (by a worker, a server or another command) "
        "until it ends; exits as `run` does",
    )
    p.set_defaults(func=cmd_show)


def add_runs(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("runs", parents=[common], help="list runs")
    p.add_argument("--status", choices=RUN_STATUSES)
    p.add_argument("--recipe")
    p.set_defaults(func=cmd_runs)


def add_events(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("events", parents=[common], help="a run's events, in order")
    p.add_argument("run_id")
    p.set_defaults(func=cmd_events)


def add_replay(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("replay", parents=[common], help="rebuild a run from its events alone")
    p.add_argument("run_id")
    p.add_argument("--at", type=int, metavar="VERSION", help="the view as of this version")
    p.add_argument("--verify", action="store_true", help="check the hash chain first")
    p.add_argument(
        "--checkpoint",
        metavar="FILE",
        help="with --verify: prove the run against a signed checkpoint (audit checkpoint)",
    )
    from controlroom.api.audit_args import add_trust_arguments

    add_trust_arguments(p)
    p.set_defaults(func=cmd_replay)


def add_export(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("export", parents=[common], help="write run.json, steps.jsonl, cache.json")
    p.add_argument("run_id")
    p.add_argument("--dir", required=True)
    p.set_defaults(func=cmd_export)


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
    print(
        f"{view.run_id}  {view.recipe_id}  {view.status}"
        f"  step {view.current_step_index + 1}/{view.total_steps}"
    )
    stalled = _stall_note(view)
    if stalled:
        print(stalled)
    print(f"task: {view.task.description}")
    print(
        f"created {view.created_at}  updated {view.updated_at}"
        f"  completed {view.completed_at or '-'}"
    )
    for step in view.steps:
        who = step.tool or step.agent_archetype or step.kind
        spent = f" ${step.spent_usd:.4f}" if step.spent_usd else ""
        print(
            f"  {step.status:>9}  {step.phase}  {step.instance_id or step.step_id} ({who})"
            f"{spent} → {step.output_slot}: {(step.output_preview or '')[:70]}"
        )
    for rung in view.ladder or []:
        print(f"  ladder {rung.kind:<9} {rung.instance_id or '-'}: {rung.reason}")
    if view.cost_usd:
        print(f"cost: ${view.cost_usd:.4f} (every reply paid for, rejected ones included)")
    if view.waiting_for_person:
        wait = view.waiting_for_person
        print(
            f"waiting for a person ({wait.owner or 'user'}) at '{wait.instance_id}': "
            f'controlroom issues answer {wait.issue_id} "RESOLUTION"'
        )
    if view.dod:
        for r in view.dod.results:
            print(f"  DoD {'✓' if r.passed else '✗'} {r.detail}")
    if view.error:
        print(f"error: {view.error}")
    if view.damage:
        print(f"damaged: {view.damage}")
        print(f"  locate it with `controlroom replay {view.run_id} --verify`")
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
        rows = views.query.runs(status=ns.status, recipe_id=ns.recipe)
    if ns.json:
        emit_json([r.model_dump(mode="json") for r in rows])
        return EXIT_DONE
    if not rows:
        print("no runs")
    for r in rows:
        note = f"  ({r.damage})" if r.damage else ""
        stalled = _stall_note(r)
        if stalled:
            note = f"  ({stalled})"
        print(
            f"{r.run_id}  {r.status:<9}  {r.recipe_id:<26}  {r.created_at}"
            f"  {r.description[:40]}{note}"
        )
    return EXIT_DONE


def _stall_note(run: RunSummary | RunDetail) -> str | None:
    """What to say of a running run that is not moving on by itself, and what to do."""
    stalled = _not_advancing(run)
    if stalled is None:
        return None
    if run.owner is None:  # queued, or released by a worker that stopped
        return (
            "queued: no process holds it; a worker takes it (`controlroom worker`), or run "
            f"it here with `controlroom resume {run.run_id}`"
        )
    return (
        f"not advancing: {stalled}; a worker takes it over (`controlroom worker`), or "
        f"continue it here with `controlroom resume {run.run_id}`"
    )


def _not_advancing(run: RunSummary | RunDetail) -> str | None:
    """Why a running run is not moving on by itself (None while something holds it): no
    process claims it, its process is gone (killed), or its lease ran out."""
    if run.status != "running":
        return None
    if run.owner is None:
        return "no process holds it"
    if owner_is_gone(run.owner):
        return f"its process {run.owner} is gone"
    if run.lease_expires_at and datetime.fromisoformat(run.lease_expires_at) < datetime.now(UTC):
        return f"the lease of {run.owner} ran out at {run.lease_expires_at}"
    return None


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
    RunService(ctx).load(ns.run_id)
    written = export_run(replay(ctx.store, ns.run_id), Path(ns.dir))
    for path in written:
        print(path)
    return EXIT_DONE
