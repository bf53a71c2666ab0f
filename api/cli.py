"""`controlroom`: run recipes as durable runs, and inspect them.

Exit codes: 0 done · 1 failed · 3 not routable (needs scoping) · 20 interrupted or
cancelled (an interrupted run is resumable) · 64 bad input · 69 serve cannot listen on
its address (port in use, not permitted) · 74 the store cannot be read or written (disk
full, read-only, locked, unreachable; nothing recorded is lost, resume once fixed) · 75
another process advanced the run · 141 the reader of the output went away (`| head`):
output stops quietly, as for any tool a shell reports stopped by SIGPIPE.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import json
import os
import signal
import socket
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

from controlroom.api.faults import EXIT_STORE_FAULT, store_fault
from controlroom.domain.errors import (
    BadInputError,
    ControlRoomError,
    NotRoutableError,
    RecipeInvalidError,
    RunConflictError,
    RunNotFoundError,
    RunStateError,
)
from controlroom.domain.events import DomainEvent
from controlroom.domain.plan_errors import PlanStateError
from controlroom.domain.run import Run, RunStatus
from controlroom.engine import event_loop
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.ports import owner_is_gone, process_owner
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore.store import Positioned
from controlroom.projections.models import RUN_STATUSES, RunDetail, RunSummary
from controlroom.projections.views import Views
from controlroom.recipes.catalog import RecipeCatalog

EXIT_DONE, EXIT_FAILED, EXIT_NOT_ROUTABLE, EXIT_INTERRUPTED = 0, 1, 3, 20
EXIT_BAD_INPUT, EXIT_UNAVAILABLE, EXIT_CONFLICT, EXIT_OUTPUT_CLOSED = 64, 69, 75, 141
STATUS_EXIT = {
    RunStatus.DONE: EXIT_DONE,
    RunStatus.FAILED: EXIT_FAILED,
    RunStatus.CANCELLED: EXIT_INTERRUPTED,
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"controlroom: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def _emit_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _parse_args_kv(pairs: list[str]) -> dict[str, Any]:
    """`KEY=VALUE`; a VALUE that parses as JSON (a list, a number) is taken as JSON."""
    import orjson

    from controlroom.api.limits import check_args

    args: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BadInputError(f"--arg '{pair[:80]}' is not KEY=VALUE")
        try:
            # orjson refuses nesting past 1024 levels instead of overflowing the stack.
            args[key.strip()] = orjson.loads(value)
        except orjson.JSONDecodeError:
            args[key.strip()] = value
    return check_args(args, "--arg")


def _open(ns: argparse.Namespace) -> Context:
    ctx = Context.open(Path(ns.workspace))
    _warn_about_recipes(ctx.catalog)
    return ctx


def _warn_about_recipes(catalog: RecipeCatalog) -> None:
    """Broken recipe files never stop reading commands; say which and why, once."""
    if not catalog.problems:
        return
    files = len({p.file for p in catalog.problems})
    print(
        f"controlroom: warning: skipped {files} broken recipe file(s); running what they "
        "define is refused until they are fixed (controlroom recipes validate):",
        file=sys.stderr,
    )
    for problem in catalog.problems:
        print(f"  {problem}", file=sys.stderr)


def _views(ctx: Context) -> Views:
    """The read models, caught up with everything recorded so far (policies react first,
    so an issue a run's last commit calls for is open before anything reads)."""
    views = Views.for_store(ctx.store, ctx.workspace.root)
    Followers(ctx.store, views).catch_up()
    return views


def cmd_replay(ns: argparse.Namespace) -> int:
    from eventsourcing.persistence import MapperDeserialisationError

    from controlroom.projections.audit import replay, verify

    ctx = _open(ns)
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
                _emit_json({"ok": False, "problems": [p.__dict__ for p in problems]})
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
    _emit_json(view)
    return EXIT_DONE


def cmd_audit(ns: argparse.Namespace) -> int:
    """Signed checkpoints of the log, and verification against one (api/audit_cli.py)."""
    from controlroom.api.audit_cli import run_audit

    return run_audit(_open(ns), ns)


def cmd_conference(ns: argparse.Namespace) -> int:
    """A conference round (api/conference_cli.py)."""
    from controlroom.api.conference_cli import run_conference

    return run_conference(_open(ns), ns)


def cmd_plan(ns: argparse.Namespace) -> int:
    """Session plans: the Chief's plan of an intent, run task by task (api/plans_cli.py)."""
    from controlroom.api.plans_cli import run_plan_command

    return run_plan_command(_open(ns), ns)


def cmd_export(ns: argparse.Namespace) -> int:
    from controlroom.projections.audit import export_run, replay

    ctx = _open(ns)
    RunService(ctx).load(ns.run_id)
    written = export_run(replay(ctx.store, ns.run_id), Path(ns.dir))
    for path in written:
        print(path)
    return EXIT_DONE


def cmd_models(ns: argparse.Namespace) -> int:
    from controlroom.models.agents import AgentDirectory
    from controlroom.models.config import config_path, render_schema

    if ns.action == "schema":
        print(render_schema(), end="")
        return EXIT_DONE
    catalog, _, _ = _catalog(ns)
    workspace = Path(ns.workspace)
    agents = AgentDirectory.for_workspace(workspace)
    roles = sorted(
        {role for r in catalog.recipes() for role in r.agent_archetypes()}
        | set(agents.config.roles)
    )
    source = config_path(workspace)
    rows = []
    for role in roles:
        profile = agents.check([role])[role]  # raises a clear error for any role it cannot serve
        provider = agents.provider_config(profile.provider)
        rows.append(
            {
                "role": role,
                "tier": profile.tier,
                "provider": profile.provider,
                "type": provider.type,
                "model": profile.model,
                "params": dict(profile.params),
                "escalation": [f"{c.provider}:{c.model}" for c in profile.escalation],
            }
        )
    if ns.json:
        _emit_json(rows)
        return EXIT_DONE
    print(f"models config: {source if source.is_file() else '(none: every role offline)'}")
    for r in rows:
        chain = f"  then {', '.join(r['escalation'])}" if r["escalation"] else ""
        print(f"  {r['role']:<12} {r['tier']}  {r['provider']} ({r['type']}) / {r['model']}{chain}")
    return EXIT_DONE


LOOPBACK = ("127.0.0.1", "::1", "localhost")


def cmd_serve(ns: argparse.Namespace) -> int:
    import uvicorn

    from controlroom.api.app import TOKEN_VAR, create_app
    from controlroom.api.origin_guard import ServedHosts, allowed_hosts
    from controlroom.engine.settings import Settings

    token = Settings.from_env().api_token  # a blank or short token is refused here (64)
    hosts = ServedHosts.bound_to(ns.host, allowed_hosts(os.environ))  # likewise
    if ns.host not in LOOPBACK and not token and not ns.insecure:
        raise BadInputError(
            f"refusing to listen on {ns.host} without {TOKEN_VAR}; set a token, or pass "
            "--insecure to accept anyone on the network"
        )
    try:
        listener = _listen(ns.host, ns.port)
    except socket.gaierror as exc:
        raise BadInputError(f"cannot listen on '{ns.host}': {exc.strerror}") from None
    except OSError as exc:
        hint = (
            "; another process is listening there: pick another --port, or --port 0 for any "
            "free port"
            if exc.errno == errno.EADDRINUSE
            else ""
        )
        print(
            f"controlroom: error: cannot listen on {ns.host}:{ns.port}: {exc.strerror}{hint}",
            file=sys.stderr,
        )
        return EXIT_UNAVAILABLE
    with listener:
        ctx = _open(ns)
        app = create_app(ctx, token, execute=not ns.no_execute, hosts=hosts)
        config = uvicorn.Config(app, log_level=ns.log_level, loop=event_loop.loop_name())
        server = uvicorn.Server(config)
        port = listener.getsockname()[1]
        host = f"[{ns.host}]" if ":" in ns.host else ns.host
        print(f"serving {ctx.workspace.root} on http://{host}:{port}", file=sys.stderr)
        try:
            server.run(sockets=[listener])
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM, re-raised by uvicorn after shutdown
            pass
        except SystemExit as exc:  # uvicorn's way to say the app failed to start
            print(
                f"controlroom: error: the server did not start (uvicorn exit {exc.code})",
                file=sys.stderr,
            )
            return EXIT_FAILED
    return EXIT_DONE


def cmd_worker(ns: argparse.Namespace) -> int:
    from controlroom.engine.worker import Worker

    ctx = _open(ns)
    views = Views.for_store(ctx.store, ctx.workspace.root)
    followers = Followers(ctx.store, views)

    def unfinished() -> list[str]:
        return [r.run_id for r in views.query.runs(status="running")]

    worker = Worker(
        ctx,
        unfinished,
        followers,
        concurrency=ns.concurrency,
        poll_s=ns.poll,
        grace_s=ns.grace,
    )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await worker.run(stop)

    print(
        f"worker {worker.owner}: up to {worker.concurrency} runs at once from "
        f"{ctx.workspace.root} (SIGTERM or Ctrl-C stops it gracefully)",
        file=sys.stderr,
    )
    event_loop.run(main())
    views.close()
    print(f"worker {worker.owner}: stopped after taking {worker.taken} run(s)", file=sys.stderr)
    return EXIT_DONE


def _listen(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound before anything starts: a taken port is a
    clear error here, not a server that resumed runs and then quit (uvicorn binds only
    after the app's start-up, and exits 3 when it cannot). Port 0 picks a free port."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def _port(raw: str) -> int:
    if not raw.strip().isdigit() or not 0 <= int(raw) <= 65535:
        raise argparse.ArgumentTypeError(
            f"'{raw}' is not a port: use 1 to 65535, or 0 for any free port"
        )
    return int(raw)


def _count(raw: str) -> int:
    text = raw.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 5 and 1 <= int(text) <= 10_000):
        raise argparse.ArgumentTypeError(f"'{raw[:40]}' is not a count from 1 to 10000")
    return int(text)


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86_400:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"'{raw[:40]}' is not a number of seconds (0-86400)")
    return value


def cmd_projections(ns: argparse.Namespace) -> int:
    """`status`: each projection's position, the log's head, the lag between them.
    `rebuild [NAME]`: empty one projection (or all) and replay the log into it."""
    ctx = _open(ns)
    counts: dict[str, int] = {}
    with Views.for_store(ctx.store, ctx.workspace.root) as views:
        if ns.action == "rebuild":
            names = [views.get(ns.name).name] if ns.name else views.names()
            counts = {name: views.rebuild(name) for name in names}
        elif ns.name:
            raise BadInputError("projections status takes no name")
        statuses = views.status()
    if ns.action == "status":
        statuses.extend(_analytics_status(ctx))
    if ns.json:
        _emit_json([s.model_dump(mode="json") for s in statuses])
    elif ns.action == "rebuild":
        for s in statuses:
            if s.name in counts:
                events = f"{counts[s.name]} event" + ("" if counts[s.name] == 1 else "s")
                print(f"rebuilt {s.name} from {events} (position {s.position})")
    else:
        print(f"{'projection':<12} {'position':>9} {'head':>9} {'lag':>9}")
        for s in statuses:
            print(f"{s.name:<12} {s.position:>9} {s.head:>9} {s.lag:>9}")
    return EXIT_DONE


def _analytics_status(ctx: Context) -> list[Any]:
    """The DuckDB analytics projection beside the others, once it exists (it is created
    by the first `controlroom analytics` or a server; never made here just to be listed)."""
    from controlroom.projections.analytics import AnalyticsProjection, analytics_path

    if not analytics_path(ctx.workspace.root).exists():
        return []
    with AnalyticsProjection.for_workspace(ctx.store, ctx.workspace.root) as analytics:
        return [analytics.status()]


def cmd_analytics(ns: argparse.Namespace) -> int:
    """SQL, reports, a shell and Parquet exports over the DuckDB analytics projection."""
    from controlroom.api.analytics_cli import run_analytics

    ctx = _open(ns)
    Followers(ctx.store).catch_up()  # policies first: their events are history too
    return run_analytics(ctx, ns)


def _print_run_summary(run: Run, ctx: Context) -> None:
    print(f"{run.id}: {run.status.value}" + (f" — {run.error}" if run.error else ""))
    with _views(ctx) as views:
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
    if slots:
        print(
            f"read any slot in full: controlroom slot {run.id} SLOT -w {workspace} "
            f"(slots: {', '.join(slots)})",
            file=sys.stderr,
        )
    print(f"recorded in {ctx.store.location()}", file=sys.stderr)
    print(
        f"see it: controlroom show {run.id} -w {workspace}  ·  every event: controlroom events "
        f"{run.id} -w {workspace}",
        file=sys.stderr,
    )


def _finish(ctx: Context, run: Run, as_json: bool) -> int:
    if as_json:
        with _views(ctx) as views:
            _emit_json(views.query.run(run.id).model_dump(mode="json"))
    else:
        _print_run_summary(run, ctx)
    return STATUS_EXIT.get(run.status, EXIT_FAILED)


def cmd_run(ns: argparse.Namespace) -> int:
    from controlroom.api.limits import check_id, check_text
    from controlroom.api.progress import ProgressPrinter

    check_text(ns.task, "TASK")
    if ns.description is not None:
        check_text(ns.description, "--description")
    if ns.session is not None:
        check_id(ns.session, "--session")
    ctx = _open(ns)
    service = RunService(ctx)
    request = RunRequest(
        ns.task, _parse_args_kv(ns.arg), session_id=ns.session, description=ns.description
    )
    printer = None if ns.quiet or ns.queue else ProgressPrinter()
    if printer:
        ctx.store.observe(printer)
    try:
        run = service.start(request, owner=None if ns.queue else process_owner())
    except NotRoutableError as exc:
        message = {"routable": False, "reason": exc.reason, "task": exc.description}
        if ns.json:
            _emit_json(message)
        else:
            print(f"not routable: {exc.reason}", file=sys.stderr)
            print(
                "hint: name a recipe id (controlroom recipes list) or rephrase the task",
                file=sys.stderr,
            )
        return EXIT_NOT_ROUTABLE
    if ns.queue and not ns.follow:
        if ns.json:
            _emit_json({"run_id": run.id, "status": "queued"})
        else:
            print(f"{run.id}: queued")
            print(
                f"a worker executes it (controlroom worker); follow it with "
                f"`controlroom show {run.id} --follow`",
                file=sys.stderr,
            )
        return EXIT_DONE
    if ns.queue:
        return _follow_to_the_end(ctx, run.id, show_progress=not ns.quiet, as_json=ns.json)
    try:
        run = event_loop.run(service.execute(run))
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: {run.id} is resumable with `controlroom resume {run.id}`",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return _finish(ctx, run, ns.json)


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


def _follow_to_the_end(ctx: Context, run_id: str, *, show_progress: bool, as_json: bool) -> int:
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


def cmd_resume(ns: argparse.Namespace) -> int:
    from eventsourcing.persistence import MapperDeserialisationError

    from controlroom.api.progress import ProgressPrinter

    ctx = _open(ns)
    service = RunService(ctx)
    with _views(ctx) as views:
        unfinished = [r.run_id for r in views.query.runs(status="running")]
    run_ids = [ns.run_id] if ns.run_id else unfinished
    if not run_ids:
        print("nothing to resume: no unfinished runs", file=sys.stderr)
        return EXIT_DONE
    worst = EXIT_DONE
    for run_id in run_ids:
        printer = None
        try:
            if not ns.quiet:
                printer = ProgressPrinter(total_steps=service.load(run_id).total_steps)
                ctx.store.observe(printer)
            run = event_loop.run(service.resume(run_id, owner=process_owner()))
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
        code = _finish(ctx, run, ns.json)
        worst = max(worst, code)
    return worst


def cmd_retry(ns: argparse.Namespace) -> int:
    """Continue a failed run from the step that failed, or from an earlier one (`--from`).

    A transport fault (429, 5xx, a dropped connection) is retried by the engine itself; an
    agent failure (no valid reply after its contract's retries, a deadline passed) halts
    the run, and this is how the user decides to go on."""
    from controlroom.api.progress import ProgressPrinter

    ctx = _open(ns)
    service = RunService(ctx)
    run = service.retry(ns.run_id, ns.from_step, owner=process_owner())
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
    return _finish(ctx, run, ns.json)


def cmd_cancel(ns: argparse.Namespace) -> int:
    ctx = _open(ns)
    run = RunService(ctx).cancel(ns.run_id, ns.reason)
    if ns.json:
        _emit_json({"run_id": run.id, "status": run.status.value})
    else:
        print(f"{run.id}: {run.status.value}")
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
    with _views(ctx) as views:
        trail = views.query.run_trail(ns.run_id)
    if ns.json:
        _emit_json([e.model_dump(mode="json") for e in trail])
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


def cmd_show(ns: argparse.Namespace) -> int:
    """The same view as `GET /api/runs/{id}`: the runs projection, caught up."""
    ctx = _open(ns)
    if ns.request:
        recorded = RunService(ctx).recorded_request(ns.run_id, ns.request)
        _emit_json(recorded) if ns.json else _print_request(recorded)
        return EXIT_DONE
    if ns.trail:
        return _show_trail(ctx, ns)
    if ns.follow:
        return _follow_to_the_end(ctx, ns.run_id, show_progress=not ns.json, as_json=ns.json)
    with _views(ctx) as views:
        view = views.query.run(ns.run_id)
    if ns.json:
        _emit_json(view.model_dump(mode="json"))
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
        print(
            f"  {step.status:>9}  {step.phase}  {step.instance_id or step.step_id} ({who})"
            f" → {step.output_slot}: {(step.output_preview or '')[:70]}"
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


def cmd_slot(ns: argparse.Namespace) -> int:
    """A slot's full text (`GET /api/runs/{id}/cache/{slot}`): an artifact's text (JSON
    pretty-printed), a pointer's tool output."""
    from controlroom.api.limits import check_id
    from controlroom.domain.run_events import ReceiptIssued
    from controlroom.projections.models import PointerSlot

    check_id(ns.run_id, "RUN_ID")
    ctx = _open(ns)
    with _views(ctx) as views:
        detail = views.query.run(ns.run_id)  # no such run: its own error
        found = views.query.slot(ns.run_id, ns.slot)
    if found is None:
        known = ", ".join(detail.cache_summary) or "none yet"
        raise BadInputError(f"run {ns.run_id} has no slot '{ns.slot}' (its slots: {known})")
    if ns.json:
        _emit_json(found.model_dump(mode="json"))
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
        _emit_json(receipt.output if receipt is not None else found.summary)
        return EXIT_DONE
    text = found.text
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            _emit_json(json.loads(stripped))
            return EXIT_DONE
        except ValueError:
            pass
    print(text, end="" if text.endswith("\n") else "\n")
    return EXIT_DONE


def cmd_runs(ns: argparse.Namespace) -> int:
    ctx = _open(ns)
    with _views(ctx) as views:
        rows = views.query.runs(status=ns.status, recipe_id=ns.recipe)
    if ns.json:
        _emit_json([r.model_dump(mode="json") for r in rows])
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
    ctx = _open(ns)
    # Existence from the raw records: the events of a damaged run must still be listable.
    if not ctx.store.recorder.select_events(ns.run_id, limit=1):
        raise RunNotFoundError(ns.run_id)
    from controlroom.eventstore.store import Damaged

    # A record that cannot be decoded is listed as damaged in its place; the rest still show.
    records = ctx.store.stream_records(ns.run_id)
    if ns.json:
        _emit_json(
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


def _catalog(ns: argparse.Namespace, warn: bool = True) -> Any:
    from controlroom.prompts.registry import PromptRegistry
    from controlroom.tools.base import ToolRegistry
    from controlroom.tools.workspace import Workspace

    workspace = Workspace(Path(ns.workspace))
    tools = ToolRegistry.default()
    prompts = PromptRegistry.for_workspace(workspace.root)
    catalog = RecipeCatalog.load(workspace.root, tools.names(), prompts.prompt_types())
    if warn:
        _warn_about_recipes(catalog)
    return catalog, tools, prompts


def cmd_route(ns: argparse.Namespace) -> int:
    from controlroom.domain.router import route

    catalog, _, _ = _catalog(ns)
    decision = route(ns.text, catalog.recipes())
    if ns.json:
        _emit_json(decision.model_dump(mode="json"))
    elif decision.routable:
        print(f"{decision.recipe_id}  ({decision.reason})")
        if decision.initial_args:
            print(f"initial args: {json.dumps(decision.initial_args)}")
    else:
        print(f"not routable: {decision.reason}")
    return EXIT_DONE if decision.routable else EXIT_NOT_ROUTABLE


def cmd_recipes(ns: argparse.Namespace) -> int:
    from controlroom.recipes.catalog import load_recipe_file, recipe_files, render_schema

    if ns.action == "schema":
        print(render_schema(), end="")
        return EXIT_DONE
    if ns.action == "validate" and ns.target:
        _, tools, prompts = _catalog(ns, warn=False)
        target = Path(ns.target)
        files = recipe_files(target) if target.is_dir() else [target]
        if not files:
            raise BadInputError(f"no recipe files at '{target}'")
        problems = []
        for path in files:
            try:
                load_recipe_file(path, tools.names(), prompts.prompt_types())
            except RecipeInvalidError as exc:
                problems.extend(exc.problems)
        if problems:
            raise RecipeInvalidError(problems)
        print(f"ok: {len(files)} recipe file(s) valid")
        return EXIT_DONE
    catalog, _, _ = _catalog(ns, warn=ns.action != "validate")
    if ns.action == "validate":
        catalog.check()  # every problem in every file, exit 64
        print(f"ok: {len(catalog.recipes())} recipes valid")
    elif ns.action == "list":
        rows = [
            {
                "recipe_id": e.recipe.recipe_id,
                "label": e.recipe.label,
                "steps": e.recipe.total_steps,
                "source": "bundled" if e.bundled else str(e.source),
                "task_patterns": e.recipe.task_patterns,
            }
            for e in catalog.entries()
        ]
        if ns.json:
            _emit_json(rows)
        else:
            for r in rows:
                print(f"{r['recipe_id']:<26} {r['steps']} steps  {r['label']}  [{r['source']}]")
    elif ns.action == "show":
        if not ns.target:
            raise BadInputError("recipes show needs a recipe id")
        _emit_json(catalog.entry(ns.target).recipe.snapshot())
    return EXIT_DONE


def cmd_issues(ns: argparse.Namespace) -> int:
    """Issues and their lifecycle (api/issues_cli.py)."""
    from controlroom.api.issues_cli import run_issues_command

    return run_issues_command(_open(ns), ns)


def cmd_workspace(ns: argparse.Namespace) -> int:
    """`workspace check`: the layout the tools will use; no scenes or chapters is an error."""
    from controlroom.tools.layout import detect_layout, no_units_message
    from controlroom.tools.workspace import Workspace

    layout = detect_layout(Workspace(Path(ns.workspace)))
    if ns.json:
        _emit_json(layout.as_dict())
    else:
        print(f"layout: {layout.source} ({layout.unit}s)")
        for unit in layout.units:
            print(f"  {layout.unit} {unit.number}: {unit.path}  — {unit.title}")
        print(f"outline: {layout.outline or 'none'}")
        print(f"canon cards: {len(layout.canon)}")
        for path in layout.canon:
            print(f"  {path}")
        if layout.other:
            print(f"other files (not read by the tools): {', '.join(layout.other)}")
        for warning in layout.warnings:
            print(f"warning: {warning}")
    if not layout.units:
        print(f"controlroom: error: {no_units_message(layout)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_DONE


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument(
        "--workspace", "-w", default=".", help="workspace folder (default: the current directory)"
    )
    common.add_argument("--json", action="store_true", help="machine-readable output")
    parser = _Parser(
        prog="controlroom",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("run", parents=[common], help="run a recipe id or a routed task")
    p.add_argument("task", help="a recipe id, or a task description for the router")
    p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--session", help="session id to link receipts to (default: a new one)")
    p.add_argument("--description", help="task description when TASK is a recipe id")
    p.add_argument("--quiet", "-q", action="store_true", help="no live progress")
    p.add_argument(
        "--queue", action="store_true", help="record the run and leave it to `controlroom worker`"
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="with --queue: show its progress while a worker executes it, until it ends",
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("worker", parents=[common], help="execute queued and abandoned runs")
    p.add_argument(
        "--concurrency", type=_count, default=8, help="runs executed at once, 1-10000 (default 8)"
    )
    p.add_argument("--poll", type=_seconds, default=0.5, help="seconds between looks for work")
    p.add_argument(
        "--grace", type=_seconds, default=30.0, help="seconds to finish steps on SIGTERM"
    )
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("resume", parents=[common], help="continue unfinished runs")
    p.add_argument("run_id", nargs="?")
    p.add_argument("--quiet", "-q", action="store_true")
    p.set_defaults(func=cmd_resume)

    p = sub.add_parser("retry", parents=[common], help="continue a failed run from a step")
    p.add_argument("run_id")
    p.add_argument(
        "--from",
        dest="from_step",
        metavar="STEP_ID",
        help="the step to run again (default: the step that failed; or an earlier one)",
    )
    p.add_argument("--quiet", "-q", action="store_true")
    p.set_defaults(func=cmd_retry)

    p = sub.add_parser("cancel", parents=[common], help="cancel a running run")
    p.add_argument("run_id")
    p.add_argument("--reason", default="cancelled by user")
    p.set_defaults(func=cmd_cancel)

    p = sub.add_parser("slot", parents=[common], help="print one slot of a run in full")
    p.add_argument("run_id")
    p.add_argument("slot")
    p.set_defaults(func=cmd_slot)

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

    p = sub.add_parser("runs", parents=[common], help="list runs")
    p.add_argument("--status", choices=RUN_STATUSES)
    p.add_argument("--recipe")
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("events", parents=[common], help="a run's events, in order")
    p.add_argument("run_id")
    p.set_defaults(func=cmd_events)

    p = sub.add_parser("route", parents=[common], help="which recipe a task routes to")
    p.add_argument("text")
    p.set_defaults(func=cmd_route)

    p = sub.add_parser("recipes", parents=[common], help="list, show, validate recipes")
    p.add_argument("action", choices=["list", "show", "validate", "schema"])
    p.add_argument("target", nargs="?", help="recipe id (show) or file/folder (validate)")
    p.set_defaults(func=cmd_recipes)

    p = sub.add_parser("replay", parents=[common], help="rebuild a run from its events alone")
    p.add_argument("run_id")
    p.add_argument("--at", type=int, metavar="VERSION", help="the view as of this version")
    p.add_argument("--verify", action="store_true", help="check the hash chain first")
    p.add_argument(
        "--checkpoint",
        metavar="FILE",
        help="with --verify: prove the run against a signed checkpoint (audit checkpoint)",
    )
    from controlroom.api.audit_cli import add_trust_arguments

    add_trust_arguments(p)
    p.set_defaults(func=cmd_replay)

    from controlroom.api.audit_cli import add_parser as add_audit_parser

    add_audit_parser(sub, common).set_defaults(func=cmd_audit)

    from controlroom.api.conference_cli import add_parser as add_conference_parser
    from controlroom.api.plans_cli import add_parser as add_plan_parser

    add_conference_parser(sub, common).set_defaults(func=cmd_conference)

    add_plan_parser(sub, common).set_defaults(func=cmd_plan)

    p = sub.add_parser("export", parents=[common], help="write run.json, steps.jsonl, cache.json")
    p.add_argument("run_id")
    p.add_argument("--dir", required=True)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("serve", parents=[common], help="serve the HTTP API and SSE feeds")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_port, default=8765, help="1-65535, or 0 for any free port")
    p.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback host without CONTROLROOM_API_TOKEN",
    )
    p.add_argument(
        "--no-execute",
        action="store_true",
        help="serve the API only: runs started over HTTP are queued for `controlroom worker`",
    )
    p.add_argument("--log-level", default="warning")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("models", parents=[common], help="check which model serves each role")
    p.add_argument("action", choices=["check", "schema"])
    p.set_defaults(func=cmd_models)

    p = sub.add_parser(
        "projections", parents=[common], help="the read models: how far they are, rebuild"
    )
    p.add_argument("action", choices=["status", "rebuild"])
    p.add_argument("name", nargs="?", help="one projection (rebuild; default: all)")
    p.set_defaults(func=cmd_projections)

    p = sub.add_parser(
        "workspace", parents=[common], help="the workspace layout: scenes, outline, canon"
    )
    p.add_argument("action", choices=["check"])
    p.set_defaults(func=cmd_workspace)

    p = sub.add_parser(
        "analytics", parents=[common], help="SQL over the whole history (DuckDB), reports"
    )
    p.add_argument("what", help="a SELECT, or: report [NAME], shell, export, status, rebuild")
    p.add_argument("name", nargs="?", help="the report's name (report)")
    p.add_argument("--csv", action="store_true", help="rows as CSV")
    p.add_argument("--parquet", metavar="DIR", help="export every table and view to DIR")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per query (default 10)")
    p.add_argument("--max-rows", type=int, default=10_000, help="rows shown (default 10000)")
    p.set_defaults(func=cmd_analytics)

    from controlroom.api.issues_cli import add_parser as add_issues_parser

    add_issues_parser(sub, common).set_defaults(func=cmd_issues)
    return parser


def _terminate_as_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        code = _main(argv)
        sys.stdout.flush()  # a reader gone before the last buffered line counts too
    except BrokenPipeError:
        return _output_closed()
    return code


def _output_closed() -> int:
    """The reader of our output went away (`controlroom runs | head -3`): stop quietly.
    Both streams point at /dev/null so the interpreter's final flush cannot complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    return EXIT_OUTPUT_CLOSED


def _main(argv: list[str] | None) -> int:
    ns = build_parser().parse_args(argv)
    try:
        if getattr(ns, "run_id", None):
            from controlroom.api.limits import check_id

            check_id(ns.run_id, "RUN_ID")
        code: int = ns.func(ns)
    except (BadInputError, RunStateError, PlanStateError) as exc:
        print(f"controlroom: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RunConflictError as exc:
        print(f"controlroom: error: {exc}", file=sys.stderr)
        return EXIT_CONFLICT
    except ControlRoomError as exc:
        fault = store_fault(exc)
        print(f"controlroom: error: {fault or exc}", file=sys.stderr)
        return EXIT_STORE_FAULT if fault else EXIT_FAILED
    except Exception as exc:
        if type(exc).__name__ == "MapperDeserialisationError":
            print(
                f"controlroom: error: the run's stored events cannot be read ({exc}); "
                "locate the damage with `controlroom replay RUN_ID --verify`",
                file=sys.stderr,
            )
            return EXIT_FAILED
        fault = store_fault(exc)  # disk full, read-only, locked: words, not a traceback
        if fault is None:
            raise
        if os.environ.get("CONTROLROOM_DEBUG"):  # the operator asked for the whole story
            traceback.print_exc()
        print(f"controlroom: error: {fault}", file=sys.stderr)
        return EXIT_STORE_FAULT
    return code


if __name__ == "__main__":
    sys.exit(main())
