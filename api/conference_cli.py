"""`controlroom conference "QUESTION"`: a conference round, its transcript printed live.

Usage and exit codes: api/conference_args.py (what `--help` prints)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from controlroom.api.cli_common import EXIT_INTERRUPTED, read_views
from controlroom.domain.conference import ConferenceRound
from controlroom.domain.errors import BadInputError
from controlroom.domain.run import RunStatus
from controlroom.engine import event_loop
from controlroom.engine.conference import ConferenceService, RoundRequest
from controlroom.engine.conference_step import RECIPE_ID
from controlroom.engine.context import Context
from controlroom.engine.ports import process_owner
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore.store import Positioned
from controlroom.projections.conference_models import RoundDetail


def run_conference(ctx: Context, ns: argparse.Namespace) -> int:
    if ns.list:
        return _list(ctx, ns)
    if ns.show:
        return _show(ctx, ns.show, ns)
    if not ns.question or not ns.question.strip():
        raise BadInputError('give the question: controlroom conference "QUESTION"')
    request = RoundRequest(
        question=ns.question,
        roles=_names(ns.roles, "--roles"),
        allowed_tools=_names(ns.allow_tools, "--allow-tools", empty_ok=True),
        require_tool=ns.require_tool,
    )
    # The round is a run (recipe `conference_round`), executed here like `controlroom run`:
    # resumable with `controlroom resume` after a crash, followed like any run.
    ConferenceService(ctx).check(request)  # bad input: refused before anything is recorded
    round_id = ctx.ids.new("conf")
    service = RunService(ctx)
    run = service.start(
        RunRequest(
            RECIPE_ID,
            {
                "roles": list(request.roles),
                "allowed_tools": list(request.allowed_tools),
                "require_tool": request.require_tool,
                "round_id": round_id,
            },
            description=request.question,
            is_recipe_id=True,
        ),
        owner=process_owner(),
    )
    printer = None if ns.json else _Printer(ctx, round_id)
    if printer is not None:
        ctx.store.observe(printer)
    try:
        run = event_loop.run(service.execute(run))
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: round {round_id} goes on with `controlroom resume {run.id}`",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    finally:
        if printer is not None:
            ctx.store.unobserve(printer)
    if run.status != RunStatus.DONE and run.error:
        print(f"controlroom: error: {run.error}", file=sys.stderr)
    return _show(ctx, round_id, ns, live=printer is not None)


def _names(raw: str, flag: str, *, empty_ok: bool = False) -> list[str]:
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names and not empty_ok:
        raise BadInputError(f"{flag} names nothing")
    if len(set(names)) != len(names):
        raise BadInputError(f"{flag} names one twice")
    return names


class _Printer:
    """Live lines on stderr as the round is recorded (a store observer: it hears every
    commit, and reads the round when one of them is the round's)."""

    def __init__(self, ctx: Context, round_id: str) -> None:
        self.ctx, self.round_id = ctx, round_id
        self.receipts = 0
        self.refused = 0
        self.failed = 0
        self.interpreting = False

    def __call__(self, *, committed: Sequence[Positioned], **future: object) -> None:
        if not any(item.event.originator_id == self.round_id for item in committed):
            return
        conference = self.ctx.store.load(ConferenceRound, self.round_id)
        if conference is not None:
            self.show(conference)

    def show(self, conference: ConferenceRound) -> None:
        for receipt in list(conference.receipts.values())[self.receipts :]:
            first = receipt.summary.splitlines()[0] if receipt.summary else ""
            print(f"  ✓ {receipt.tool} {receipt.receipt_id}: {first[:100]}", file=sys.stderr)
        for refused in conference.refused[self.refused :]:
            print(f"  ✘ {refused.tool} refused: {refused.reason}", file=sys.stderr)
        for failed in conference.failed_attempts[self.failed :]:
            then = f"asked again after {failed.retry_in_s:g}s" if failed.will_retry else "gave up"
            print(f"  ↻ {failed.role}: {failed.message[:120]} ({then})", file=sys.stderr)
        self.receipts, self.refused = len(conference.receipts), len(conference.refused)
        self.failed = len(conference.failed_attempts)
        if (
            conference.evidence is not None
            and conference.status == "open"
            and not conference.replies
            and not self.interpreting
        ):
            self.interpreting = True
            print(f"  … {len(conference.roles)} role(s) interpreting at once", file=sys.stderr)


def _show(ctx: Context, round_id: str, ns: argparse.Namespace, *, live: bool = False) -> int:
    # After a round ran here, the close policy files the transcript issue first.
    with read_views(ctx, after_command=live or not ns.show) as views:
        detail = views.conferences.round(round_id)
    if ns.json:
        print(detail.model_dump_json(indent=2))
    else:
        _print(detail)
    return 1 if detail.status == "failed" else 0


def _print(detail: RoundDetail) -> None:
    print(f"conference {detail.round_id} ({detail.status}): {detail.question}")
    for reply in detail.replies:
        mark = {"accepted": "✔", "abstained": "–", "rejected": "✘"}.get(reply.status, "?")
        micro = f" [{', '.join(c.micro_step for c in reply.calls)}]" if len(reply.calls) > 1 else ""
        print(f"  {mark} {reply.role} {reply.status}{micro}")
        for line in (reply.text or "").splitlines():
            print(f"      {line}")
        if reply.reason:
            print(f"      rejected: {reply.reason}")
    if detail.error:
        print(f"failed: {detail.error}")
    if detail.issue_id:
        issue = detail.issue_id
        print(f"transcript saved as issue {issue}: controlroom issues show {issue}")


def _list(ctx: Context, ns: argparse.Namespace) -> int:
    with read_views(ctx) as views:
        rounds = views.conferences.rounds()
    if ns.json:
        print("[" + ",".join(r.model_dump_json() for r in rounds) + "]")
        return 0
    if not rounds:
        print('no conference rounds (start one: controlroom conference "QUESTION")')
    for r in rounds:
        print(
            f"{r.round_id}  {r.status:<9} {r.accepted} accepted, {r.abstained} abstained, "
            f"{r.rejected} rejected  {r.question}"
        )
    return 0
