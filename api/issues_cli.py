"""`controlroom issues`: what runs found, and its lifecycle.

Usage and exit codes: api/issues_args.py (what `--help` prints)."""

from __future__ import annotations

import argparse
import json

from controlroom.api.cli_common import read_views
from controlroom.domain.errors import BadInputError
from controlroom.engine.context import Context
from controlroom.engine.issues import IssueService
from controlroom.projections.models import IssueDetail, IssueView
from controlroom.projections.views import Views


def run_issues_command(ctx: Context, ns: argparse.Namespace) -> int:
    if ns.action == "list":
        return _list(ctx, ns)
    if not ns.issue_id:
        raise BadInputError(f"issues {ns.action} needs an issue id (see `controlroom issues`)")
    service = IssueService(ctx)
    if ns.action == "close":
        service.close(ns.issue_id, _required(ns.reason, "--reason"))
    elif ns.action == "reopen":
        service.reopen(ns.issue_id, _required(ns.reason, "--reason"))
    elif ns.action == "comment":
        service.comment(ns.issue_id, _required(ns.text, "TEXT"))
    elif ns.action == "answer":
        if ns.model:
            ctx.agents.check_model(ns.model)  # named explicitly, and served: or refused now
        answered = service.answer(ns.issue_id, _required(ns.text, "RESOLUTION"), model=ns.model)
        return _continue(ctx, ns, answered.run_id)
    views = _views(ctx, ns)
    with views:
        issue = views.query.issue_detail(ns.issue_id)
        reports = {
            e.receipt_id: views.query.receipt_report(issue.issue_id, e.receipt_id)
            for e in issue.trail
            if ns.full and e.has_report and e.receipt_id
        }
    if ns.json:
        body = issue.model_dump(mode="json")
        if ns.full:
            body["reports"] = reports
        print(json.dumps(body, indent=2, ensure_ascii=False))
        return 0
    if ns.action in ("close", "reopen", "comment"):
        # a change: say what it did, not the whole story again (`issues show` tells it)
        print(f"{issue.issue_id}: {issue.status} — {issue.title}")
        print(f"  the whole story: controlroom issues show {issue.issue_id}")
        return 0
    _print_issue(issue, ns.full)
    _print_trail(issue, reports)
    return 0


def _required(value: str | None, name: str) -> str:
    if value is None or not value.strip():
        raise BadInputError(f"give {name}")
    return value


def _views(ctx: Context, ns: argparse.Namespace) -> Views:
    """After close, reopen or comment the policies react first; list and show only read."""
    return read_views(ctx, after_command=ns.action in ("close", "reopen", "comment", "answer"))


def _continue(ctx: Context, ns: argparse.Namespace, run_id: str | None) -> int:
    """After an answer: the policy hands it to the waiting run, which goes on here."""
    from controlroom.api.runs_cli import resume_here

    with read_views(ctx, after_command=True):
        pass  # the answer policy reacts: the run's step runs again with the resolution
    if run_id is None:
        return 0
    if ns.no_continue:
        print(f"answered; continue the run with `controlroom resume {run_id}`")
        return 0
    return resume_here(ctx, run_id, quiet=getattr(ns, "quiet", False), as_json=ns.json)


def _list(ctx: Context, ns: argparse.Namespace) -> int:
    views = _views(ctx, ns)
    with views:
        rows = views.query.issues(run_id=ns.run, status=ns.status)
    if ns.json:
        print(json.dumps([r.model_dump(mode="json") for r in rows], indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print("no issues")
    for r in rows:
        again = f" (+{len(r.runs) - 1} run(s) found it again)" if len(r.runs) > 1 else ""
        print(f"{r.issue_id}  {r.status:<6}  run {r.run_id}  {r.title}{again}")
    return 0


def _print_trail(issue: IssueDetail, reports: dict[str, str]) -> None:
    if not issue.trail:
        return
    print("  audit trail (in the order it happened):")
    for e in issue.trail:
        what = e.packet_id or e.receipt_id or ""
        print(f"    {e.at}  {e.kind:<12} {e.step_id or '':<12} {e.actor or ''}  {what}")
        if e.kind == "packet":
            print(f"        {e.summary}")
        elif e.excerpt:
            print(f"        {e.excerpt}")
        if e.receipt_id in reports:
            print("        report:")
            for line in reports[e.receipt_id].splitlines():
                print(f"          {line}")
    if any(e.has_report for e in issue.trail) and not reports:
        print(f"  full reports: controlroom issues show {issue.issue_id} --full")


def _print_issue(issue: IssueView, full: bool) -> None:
    print(f"{issue.issue_id}  {issue.status}  {issue.kind}")
    print(f"  {issue.title}")
    print(f"  opened {issue.opened_at} by run {issue.run_id} ({issue.recipe_id})")
    if len(issue.runs) > 1:
        print(f"  found again by: {', '.join(issue.runs[1:])}")
    if issue.status == "closed":
        print(f"  closed {issue.closed_at}: {issue.resolution}")
    detail = issue.detail if full or len(issue.detail) <= 400 else issue.detail[:400] + " …"
    print(f"  detail: {detail}")
    if issue.evidence is not None:
        evidence = json.dumps(issue.evidence, ensure_ascii=False)
        if not full and len(evidence) > 400:
            evidence = evidence[:400] + " … (--full for all of it)"
        print(f"  evidence: {evidence}")
    if issue.history:
        print("  history:")
        for entry in issue.history:
            print(f"    {entry.at}  {entry.event} by {entry.by}: {entry.text}")
    print(
        f'next: `controlroom issues comment {issue.issue_id} "…"`, '
        f"`controlroom issues {'reopen' if issue.status == 'closed' else 'close'} "
        f'{issue.issue_id} --reason "…"`'
    )
