"""Running runs: `controlroom run`, `resume`, `retry`, `cancel`, and following a run that
another process advances (`run --queue --follow`, `show --follow`).

controlroom run TASK_OR_RECIPE [--arg KEY=VALUE]… [--queue [--follow]]
controlroom resume [RUN_ID]          every unfinished run, or one
controlroom retry RUN_ID [--from STEP_ID]
controlroom cancel RUN_ID [--reason "…"]
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from controlroom.api.cli_common import (
    EXIT_CONFLICT,
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_HUMAN_INPUT,
    EXIT_INTERRUPTED,
    EXIT_NOT_ROUTABLE,
    STATUS_EXIT,
    emit_json,
    open_context,
    parse_args_kv,
    read_views,
)
from controlroom.domain.errors import ControlRoomError, NotRoutableError, RunConflictError
from controlroom.domain.events import DomainEvent
from controlroom.domain.run import Run, RunStatus
from controlroom.engine import event_loop
from controlroom.engine.context import Context
from controlroom.engine.ports import process_owner
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore.config import STORE_VAR, store_env
from controlroom.eventstore.store import Positioned


def cmd_run(ns: argparse.Namespace) -> int:
    from controlroom.api.limits import check_id, check_text
    from controlroom.api.progress import ProgressPrinter

    check_text(ns.task, "TASK")
    if ns.description is not None:
        check_text(ns.description, "--description")
    if ns.session is not None:
        check_id(ns.session, "--session")
    ctx = open_context(ns)
    service = RunService(ctx)
    request = RunRequest(
        ns.task, parse_args_kv(ns.arg), session_id=ns.session, description=ns.description
    )
    printer = None if ns.quiet or ns.queue else ProgressPrinter()
    if printer:
        ctx.store.observe(printer)
    try:
        run = service.start(request, owner=None if ns.queue else process_owner())
    except NotRoutableError as exc:
        message = {"routable": False, "reason": exc.reason, "task": exc.description}
        if ns.json:
            emit_json(message)
        else:
            print(f"not routable: {exc.reason}", file=sys.stderr)
            print(
                "hint: name a recipe id (controlroom recipes list) or rephrase the task",
                file=sys.stderr,
            )
        return EXIT_NOT_ROUTABLE
    if ns.queue and not ns.follow:
        if ns.json:
            emit_json({"run_id": run.id, "status": "queued"})
        else:
            print(f"{run.id}: queued")
            print(
                f"a worker executes it (controlroom worker); follow it with "
                f"`controlroom show {run.id} --follow`",
                file=sys.stderr,
            )
        return EXIT_DONE
    if ns.queue:
        return follow_to_the_end(ctx, run.id, show_progress=not ns.quiet, as_json=ns.json)
    try:
        run = event_loop.run(service.execute(run))
        run = with_children(ctx, run)
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: {run.id} is resumable with `controlroom resume {run.id}`",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return _finish(ctx, run, ns.json, ns.quiet)


def cmd_resume(ns: argparse.Namespace) -> int:
    from eventsourcing.persistence import MapperDeserialisationError

    from controlroom.api.progress import ProgressPrinter

    ctx = open_context(ns)
    service = RunService(ctx)
    # Recovery after a crash: the policies react first to whatever was recorded before it
    # (the issue a run's last commit called for, a plan's next task).
    with read_views(ctx, after_command=True) as views:
        unfinished = [r.run_id for r in views.query.runs(status="running")]
    run_ids = [ns.run_id] if ns.run_id else unfinished
    if not run_ids:
        print("nothing to resume: no unfinished runs", file=sys.stderr)
        return EXIT_DONE
    worst = EXIT_DONE
    elsewhere: list[str] = []
    for run_id in run_ids:
        printer = None
        try:
            found = service.load(run_id)  # once: each load folds the run's whole stream
            if not ns.run_id and found.is_finished:
                continue  # finished since the list was read (an eval ran its unfinished fork)
            if not ns.run_id and found.belongs_elsewhere(service.workspace_key):
                elsewhere.append(run_id)  # another workspace's, on a store they share
                continue
            if not ns.quiet:
                printer = ProgressPrinter(total_steps=found.total_steps)
                ctx.store.observe(printer)
            run = event_loop.run(service.resume(run_id, owner=process_owner(), here=ns.here))
            run = with_children(ctx, run)
        except KeyboardInterrupt:
            print(f"\ninterrupted: {run_id} is resumable", file=sys.stderr)
            return EXIT_INTERRUPTED
        except (ControlRoomError, MapperDeserialisationError) as exc:
            if ns.run_id and isinstance(exc, ControlRoomError):
                raise
            # Resuming every unfinished run: one that cannot be resumed (another live
            # process holds it, its events are damaged) is reported, and the rest go on.
            print(f"skipped {run_id}: {exc}", file=sys.stderr)
            worst = max(worst, EXIT_CONFLICT if isinstance(exc, RunConflictError) else EXIT_FAILED)
            continue
        finally:
            if printer:
                ctx.store.unobserve(printer)
        code = _finish(ctx, run, ns.json, ns.quiet)
        worst = max(worst, code)
    if elsewhere:
        print(
            f"left {len(elsewhere)} unfinished run(s) of other workspaces sharing this store "
            f"to them: {', '.join(elsewhere)} (`controlroom show RUN` names each one's)",
            file=sys.stderr,
        )
    return worst


def with_children(ctx: Context, run: Run) -> Run:
    """When the run waits on child runs it started (or is the child of a tree), execute
    the tree here until its root finishes or waits on a person."""
    if run.awaiting.get("kind") != "child_runs" and run.origin.kind != "parent_step":
        return run
    from controlroom.engine.followers import Followers
    from controlroom.engine.tree_driver import drive_tree
    from controlroom.projections.views import Views

    root = run
    if run.origin.root_run_id and run.origin.root_run_id != run.id:
        root = RunService(ctx).load(run.origin.root_run_id)
    followers = Followers(ctx.store, Views.for_store(ctx.store, ctx.workspace.root))
    return event_loop.run(drive_tree(ctx, root, followers, process_owner()))


def resume_here(ctx: Context, run_id: str, *, quiet: bool, as_json: bool) -> int:
    """Continue one run in this process (after a person's answer), reported as `run` does."""
    from controlroom.api.progress import ProgressPrinter

    service = RunService(ctx)
    printer = None if quiet else ProgressPrinter(total_steps=service.load(run_id).total_steps)
    if printer:
        ctx.store.observe(printer)
    try:
        run = event_loop.run(service.resume(run_id, owner=process_owner()))
    except KeyboardInterrupt:
        print(f"\ninterrupted: {run_id} is resumable", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if printer:
            ctx.store.unobserve(printer)
    return _finish(ctx, run, as_json)


def cmd_retry(ns: argparse.Namespace) -> int:
    """Continue a failed run from the step that failed, or from an earlier one (`--from`).

    A transport fault (429, 5xx, a dropped connection) is retried by the engine itself; an
    agent failure (no valid reply after its contract's retries, a deadline passed) halts
    the run, and this is how the user decides to go on."""
    from controlroom.api.progress import ProgressPrinter

    ctx = open_context(ns)
    service = RunService(ctx)
    run = service.retry(ns.run_id, ns.from_step, owner=process_owner(), here=ns.here)
    printer = None if ns.quiet else ProgressPrinter(total_steps=run.total_steps)
    if printer:
        ctx.store.observe(printer)
    try:
        run = event_loop.run(service.execute(run))
    except KeyboardInterrupt:
        print(f"\ninterrupted: {run.id} is resumable", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if printer:
            ctx.store.unobserve(printer)
    return _finish(ctx, run, ns.json, ns.quiet)


def cmd_cancel(ns: argparse.Namespace) -> int:
    ctx = open_context(ns)
    run = RunService(ctx).cancel(ns.run_id, ns.reason)
    if ns.json:
        emit_json({"run_id": run.id, "status": run.status.value})
    else:
        print(f"{run.id}: {run.status.value}")
    return EXIT_DONE


def _follow(ctx: Context, run_id: str, printer: Any) -> Run:
    """Show a run's progress while another process (a worker) advances it, until it ends."""
    version = 0
    while True:
        fresh = [e for e in ctx.store.events.get(run_id, gt=version) if isinstance(e, DomainEvent)]
        if printer is not None and fresh:
            printer(committed=[Positioned(0, e) for e in fresh], tracking=None)
        if fresh:
            version = fresh[-1].originator_version
        run = RunService(ctx).load(run_id)
        if run.is_finished:
            return run
        time.sleep(0.3)


def follow_to_the_end(ctx: Context, run_id: str, *, show_progress: bool, as_json: bool) -> int:
    """Follow a run another process advances (`run --queue --follow`, `show --follow`),
    then report it as `run` does."""
    from controlroom.api.progress import ProgressPrinter

    run = RunService(ctx).load(run_id)  # no such run: its own error, before any wait
    try:
        run = _follow(ctx, run.id, ProgressPrinter() if show_progress else None)
    except KeyboardInterrupt:
        print(f"\nstopped following {run.id}; it goes on without you", file=sys.stderr)
        return EXIT_INTERRUPTED
    return _finish(ctx, run, as_json)


def _failed_dod_checks(run: Run) -> int | None:
    """How many Definition of Done checks failed a run that failed on them alone (every
    step ran); None for any other run."""
    if run.status != RunStatus.FAILED or not run.dod_results:
        return None
    failing = sum(not r.passed for r in run.dod_results)
    return failing or None


def _print_run_summary(run: Run, ctx: Context, quiet: bool = False) -> None:
    if run.awaiting.get("kind") == "person":
        issue = run.awaiting.get("issue_id")
        print(
            f"{run.id}: waiting for a person ({run.awaiting.get('owner', 'user')}) at step "
            f"'{run.waiting_on}'"
        )
        print(
            f'  answer: controlroom issues answer {issue} "RESOLUTION"   '
            f"(read the story: controlroom issues show {issue}; or: controlroom cancel "
            f"{run.id})"
        )
    elif (failing := _failed_dod_checks(run)) is not None:
        print(
            f"{run.id}: failed its Definition of Done ({failing} of {len(run.dod_results or [])}"
            " check(s)) — every step ran and nothing crashed: the checks found what follows"
        )
    else:
        state = run.status.value + (" (partial success)" if run.outcome == 12 else "")
        print(f"{run.id}: {state}" + (f" — {run.error}" if run.error else ""))
    with read_views(ctx, after_command=True) as views:
        issues = views.query.issues(run_id=run.id)
    for issue in issues:
        print(f"  issue {issue.issue_id}: {issue.title}")
        evidence = issue.evidence
        if isinstance(evidence, dict):
            for finding in evidence.get("findings") or evidence.get("conflicts") or []:
                message = finding.get("message") if isinstance(finding, dict) else finding
                print(f"    - {message or finding}")
    for written in run.files_written.values():
        verb = "already held" if written.already_applied else "wrote"
        print(f"  {verb} {ctx.workspace.root / written.path} ({written.bytes} bytes)")
    # Where the results are: stderr, so stdout stays the run's one-line outcome for scripts.
    workspace = ctx.workspace.root
    slots = [s for s in run.slot_texts if s != "task"]
    if slots and not quiet:
        print(
            f"read any slot in full: controlroom slot {run.id} SLOT -w {workspace} "
            f"(slots: {', '.join(slots)})",
            file=sys.stderr,
        )
    print(f"recorded in {ctx.store.location()}", file=sys.stderr)
    # A store other than the workspace's own file is named in the commands to see the run:
    # in a shell without CONTROLROOM_STORE they would look in the file and find nothing.
    default = store_env(workspace, "")["SQLITE_DBNAME"]
    own_file = ctx.store.backend == "sqlite" and ctx.store.location() == default
    memory = ctx.store.backend == "memory"  # nothing to see once this process ends
    store = "" if own_file or memory else f"{STORE_VAR}={shlex.quote(_store_spec(ctx))} "
    if quiet and not store:
        return  # -q: where the run is recorded; how to see it only from another store
    print(
        f"see it: {store}controlroom show {run.id} -w {workspace}  ·  every event: "
        f"{store}controlroom events {run.id} -w {workspace}",
        file=sys.stderr,
    )


def _store_spec(ctx: Context) -> str:
    """The store as CONTROLROOM_STORE names it (a PostgreSQL store without its password)."""
    location = ctx.store.location()
    if ctx.store.backend == "sqlite":
        return f"sqlite://{Path(location).resolve()}"
    return location


def _finish(ctx: Context, run: Run, as_json: bool, quiet: bool = False) -> int:
    if as_json:
        with read_views(ctx, after_command=True) as views:
            emit_json(views.query.run(run.id).model_dump(mode="json"))
    else:
        _print_run_summary(run, ctx, quiet)
    if run.awaiting.get("kind") == "person":
        return EXIT_HUMAN_INPUT
    if run.is_finished and run.outcome is not None:
        return run.outcome  # seed 004's code: 0, 1, 2, 10, 11, 12, 20, 21
    return STATUS_EXIT.get(run.status, EXIT_FAILED)
