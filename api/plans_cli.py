"""`controlroom plan`: session plans from one intent, approved and run by the user.

Usage and exit codes: api/plans_args.py (what `--help` prints)."""

from __future__ import annotations

import argparse
import sys

from controlroom.api.cli_common import read_views
from controlroom.domain.errors import BadInputError
from controlroom.domain.plan import PlanStatus, SessionPlan
from controlroom.engine import event_loop
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.projections.plan_models import PlanDetail
from controlroom.projections.views import Views

EXIT_DONE, EXIT_FAILED = 0, 1
_MARK = {
    "done": "✔",
    "failed": "✘",
    "running": "▶",
    "pending": "·",
    "blocked": "⏸",
    "needs_scoping": "?",
}


#: The plan commands that only read.
READ_ACTIONS = frozenset({"show", "list", "export"})


def run_plan_command(ctx: Context, ns: argparse.Namespace) -> int:
    from controlroom.engine.plans import PlanService  # the Chief and the tools: not for --help

    service = PlanService(ctx)
    action = ns.action
    if action == "list":
        return _list(ctx, ns)
    if not ns.target:
        raise BadInputError(
            f"plan {action} needs {'an intent' if action == 'create' else 'a plan id'}"
        )
    if action == "create":
        plan = event_loop.run(service.create(ns.target))
        return _show(ctx, plan.id, ns, created=True)
    plan_id = ns.target
    if action == "show":
        return _show(ctx, plan_id, ns)
    if action == "export":
        return _export(ctx, plan_id, ns)
    if action == "approve":
        service.approve(plan_id)
    elif action == "start":
        service.start(plan_id)
        return _execute(ctx, plan_id, ns)
    elif action == "pause":
        service.pause(plan_id, ns.reason)
    elif action == "resume":
        if service.load(plan_id).status == PlanStatus.PAUSED:
            service.resume(plan_id)
        return _execute(ctx, plan_id, ns)
    elif action == "answer":
        task_id, answer = _task_and_text(ns, "ANSWER")
        service.answer(plan_id, task_id, answer)
    elif action == "force-start":
        service.force_start(plan_id, _task_id(ns))
    elif action == "reorder":
        service.reorder(plan_id, _order(ns))
    elif action == "remove":
        service.remove(plan_id, _task_id(ns), cascade=ns.cascade)
    elif action == "edit":
        task_id, description = _task_and_text(ns, "DESCRIPTION")
        service.edit(plan_id, task_id, description)
    elif action == "add":
        description = " ".join(ns.rest).strip()
        if not description:
            raise BadInputError('plan add needs a DESCRIPTION: plan add PLAN "DESCRIPTION"')
        service.add(plan_id, description, _after(ns.after))
    return _show(ctx, plan_id, ns)


def _execute(ctx: Context, plan_id: str, ns: argparse.Namespace) -> int:
    """Run the plan here until it finishes, pauses or waits on the user; with --queue,
    leave its runs to `controlroom worker` (or a server) instead."""
    from controlroom.engine.plan_driver import drive

    views = Views.for_store(ctx.store, ctx.workspace.root)
    followers = Followers(ctx.store, views)
    if ns.queue:
        followers.catch_up()  # the policies start the ready tasks' runs, queued
        return _show(ctx, plan_id, ns)
    printer = None if ns.quiet or ns.json else _Printer()
    try:
        plan = event_loop.run(drive(ctx, plan_id, followers, on_change=printer))
    except KeyboardInterrupt:
        print(
            "\nstopped; the plan stays as recorded: continue with "
            f"`controlroom plan resume {plan_id}`",
            file=sys.stderr,
        )
        return 130
    followers.catch_up()
    code = _show(ctx, plan_id, ns)
    for task_id, given_up in plan.abandoned_reviews.items():
        print(
            f"controlroom: the Chief's review of task {task_id} was given up after "
            f"{given_up.attempts} attempt(s): {_short(given_up.error)}; the task's own "
            f"outcome stands ({plan.task_state(task_id).value})",
            file=sys.stderr,
        )
    if plan.status == PlanStatus.FAILED:
        return EXIT_FAILED
    return code


class _Printer:
    """One line per task whose state changed, as the plan moves."""

    def __init__(self) -> None:
        self.seen: dict[int, str] = {}
        self.review_failures: dict[int, int] = {}

    def __call__(self, plan: SessionPlan) -> None:
        for task_id, state in plan.states().items():
            if self.seen.get(task_id) != state.value:
                self.seen[task_id] = state.value
                task = plan.tasks[task_id]
                print(
                    f"  {_MARK.get(state.value, ' ')} task {task_id} {state.value}: "
                    f"{task.description}",
                    file=sys.stderr,
                )
        for task_id, failures in plan.review_failures.items():
            for failed in failures[self.review_failures.get(task_id, 0) :]:
                then = (
                    f"asked again at {failed.retry_at:%H:%M:%S}" if failed.retry_at else "given up"
                )
                print(
                    f"  ↻ the Chief's review of task {task_id} failed (attempt "
                    f"{failed.attempt}; {then}): {_short(failed.error, 160)}",
                    file=sys.stderr,
                )
            self.review_failures[task_id] = len(failures)


def _show(ctx: Context, plan_id: str, ns: argparse.Namespace, *, created: bool = False) -> int:
    # After a command that changed the plan the policies react first (its ready tasks'
    # runs start); `plan show` only reads.
    with read_views(ctx, after_command=ns.action not in READ_ACTIONS) as views:
        detail = views.plans.plan(plan_id)
    if ns.json:
        print(detail.model_dump_json(indent=2))
        return EXIT_DONE
    _print_plan(detail, created, ctx.store.load(SessionPlan, plan_id))
    return EXIT_DONE


def _print_plan(plan: PlanDetail, created: bool, recorded: SessionPlan | None = None) -> None:
    print(f"plan {plan.plan_id} ({plan.status}): {plan.intent}")
    for task in plan.tasks:
        deps = f" after {', '.join(map(str, task.deps))}" if task.deps else ""
        recipe = task.recipe_id or "not routed"
        forced = " (force-started)" if task.forced else ""
        print(
            f"  {_MARK.get(task.state, ' ')} {task.task_id}. {task.description}  "
            f"[{task.state}{forced}; {recipe}{deps}]"
        )
        if task.dod:
            print(f"       DoD: {task.dod}")
        if task.scoping_question:
            print(f"       question: {task.scoping_question}")
            for index, choice in enumerate(task.choices, 1):
                print(f"         {index}) {choice}")
        if task.run_id:
            status = f" ({task.run_status})" if task.run_status else ""
            print(f"       run: {task.run_id}{status}")
        if task.outcome_detail and task.state == "failed":
            print(f"       why: {task.outcome_detail}")
        if task.review:
            print(f"       Chief: {task.review.decision} — {task.review.notes}")
        elif recorded is not None:
            _print_review_failure(recorded, task.task_id)
    _print_next(plan, created)


def _print_review_failure(plan: SessionPlan, task_id: int) -> None:
    """A review that failed: given up, or to be asked again (and when)."""
    given_up = plan.abandoned_reviews.get(task_id)
    failures = plan.review_failures.get(task_id)
    if given_up is not None:
        print(
            f"       Chief review given up after {given_up.attempts} attempt(s): "
            f"{_short(given_up.error)}"
        )
    elif failures:
        last = failures[-1]
        when = f", asked again at {last.retry_at:%H:%M:%S}" if last.retry_at else ""
        print(f"       Chief review attempt {last.attempt} failed{when}: {_short(last.error)}")


def _short(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _print_next(plan: PlanDetail, created: bool) -> None:
    questions = [t for t in plan.tasks if t.state == "needs_scoping"]
    if plan.status == "draft":
        print(f"next: review it, then `controlroom plan approve {plan.plan_id}`")
    elif plan.status == "approved":
        print(f"next: `controlroom plan start {plan.plan_id}`")
    elif plan.status == "paused":
        print(f"paused: continue with `controlroom plan resume {plan.plan_id}`")
    elif plan.status in ("done", "failed"):
        print(f"plan {plan.status}: {plan.summary or ''}".rstrip())
        print("each task's run: `controlroom show RUN_ID`; issues: `controlroom issues`")
    if questions and plan.status not in ("done", "failed"):
        first = questions[0]
        print(
            f"waiting for your answer: `controlroom plan answer {plan.plan_id} "
            f'{first.task_id} "..."`' + (" (a choice's number works)" if first.choices else "")
        )
        if plan.status == "running":
            print(f"then `controlroom plan resume {plan.plan_id}` runs what became ready")
    del created


def _export(ctx: Context, plan_id: str, ns: argparse.Namespace) -> int:
    """Appendix G's file layout, as a projection of the plan's events."""
    import json
    from pathlib import Path

    if not ns.dir:
        raise BadInputError("plan export needs --dir DIR")
    with read_views(ctx) as views:
        plan = views.plans.plan(plan_id)
    document = {
        "session_id": plan.session_id,
        "plan_id": plan.plan_id,
        "created_by": plan.created_by,
        "status": plan.status,
        "created_at": plan.created_at,
        "intent": plan.intent,
        "tasks": [
            {
                "id": t.task_id,
                "description": t.description,
                "recipe_id": t.recipe_id,
                "deps": t.deps,
                "dod": t.dod,
                "status": t.state,
                "run_id": t.run_id,
                **({"scoping_question": t.scoping_question} if t.scoping_question else {}),
            }
            for t in plan.tasks
        ],
    }
    target = Path(ns.dir) / "sessions" / plan.session_id / "plan.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {target}")
    return EXIT_DONE


def _list(ctx: Context, ns: argparse.Namespace) -> int:
    with read_views(ctx) as views:
        rows = views.plans.plans(ns.status)
    if ns.json:
        print("[" + ",".join(r.model_dump_json() for r in rows) + "]")
        return EXIT_DONE
    if not rows:
        print('no plans (make one with `controlroom plan create "INTENT"`)')
    for r in rows:
        print(
            f"{r.plan_id}  {r.status:<8} {r.done}/{r.tasks} done"
            f"{f', {r.needs_scoping} to scope' if r.needs_scoping else ''}  {r.intent}"
        )
    return EXIT_DONE


def _task_id(ns: argparse.Namespace) -> int:
    if not ns.rest:
        raise BadInputError(f"plan {ns.action} needs a TASK id")
    raw = ns.rest[0]
    if not raw.isdigit():
        raise BadInputError(f"TASK must be a task number, not '{raw[:40]}'")
    return int(raw)


def _task_and_text(ns: argparse.Namespace, what: str) -> tuple[int, str]:
    task_id = _task_id(ns)
    text = " ".join(ns.rest[1:]).strip()
    if not text:
        raise BadInputError(f"plan {ns.action} needs TASK and {what}")
    return task_id, text


def _after(raw: str | None) -> list[int] | None:
    """`--after`: None when not given (the plan's last task), [] for '' (no dependency)."""
    if raw is None:
        return None
    parts = [p for p in raw.replace(" ", "").split(",") if p]
    if not all(p.isdigit() for p in parts):
        raise BadInputError("--after takes task ids, e.g. 1,2")
    return [int(p) for p in parts]


def _order(ns: argparse.Namespace) -> list[int]:
    raw = ",".join(ns.rest).replace(" ", "")
    parts = [p for p in raw.split(",") if p]
    if not parts or not all(p.isdigit() for p in parts):
        raise BadInputError("plan reorder needs the task ids in their new order, e.g. 3,1,2")
    return [int(p) for p in parts]
