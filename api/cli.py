"""`controlroom`: run recipes as durable runs, and inspect them.

Exit codes: a run's own ending is seed 004's outcome code — 0 success · 1 failure ·
2 depth exceeded (a child run would nest past the depth budget) · 3 waits for a person's
answer, or the task is not routable · 10 needs refinement · 11 needs escalation · 12
partial success · 20 interrupted or cancelled (an interrupted run is resumable) · 21 timed
out. The command's own: 64 bad input · 69 serve cannot listen on its address (port in use,
not permitted) · 74 the store cannot be read or written (disk full, read-only, locked,
unreachable; nothing recorded is lost, resume once fixed) · 75 another process advanced
the run · 141 the reader of the output went away (`| head`): output stops quietly, as for
any tool a shell reports stopped by SIGPIPE. With --output-format json, errors are one
JSON object on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import NoReturn

from controlroom.api import (
    audit_args,
    catalog_args,
    conference_args,
    inspect_args,
    issues_args,
    loops_args,
    plans_args,
    runs_args,
    serve_args,
    status_args,
    telemetry_args,
    whatif_args,
)
from controlroom.api.cli_exit import (
    EXIT_BAD_INPUT,
    EXIT_CONFLICT,
    EXIT_FAILED,
    EXIT_OUTPUT_CLOSED,
)
from controlroom.api.commands import Command
from controlroom.api.faults import EXIT_STORE_FAULT, store_fault
from controlroom.domain.errors import (
    BadInputError,
    ControlRoomError,
    RunConflictError,
    RunNotFoundError,
    RunStateError,
)
from controlroom.domain.plan_errors import PlanStateError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"controlroom: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument(
        "--workspace", "-w", default=".", help="workspace folder (default: the current directory)"
    )
    common.add_argument("--json", action="store_true", help="machine-readable output")
    common.add_argument(
        "--output-format",
        choices=("text", "json"),
        default="text",
        help="json: what --json prints on stdout, and errors as JSON on stderr (seed 004)",
    )
    parser = _Parser(
        prog="controlroom",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    # Each group adds its own commands; the order here is the order `--help` lists them in.
    runs_args.add_run(sub, common)
    serve_args.add_worker(sub, common)
    runs_args.add_resume(sub, common)
    runs_args.add_retry(sub, common)
    runs_args.add_cancel(sub, common)
    inspect_args.add_slot(sub, common)
    inspect_args.add_show(sub, common)
    inspect_args.add_runs(sub, common)
    inspect_args.add_events(sub, common)
    catalog_args.add_route(sub, common)
    catalog_args.add_recipes(sub, common)
    loops_args.add_parser(sub, common)
    inspect_args.add_replay(sub, common)
    whatif_args.add_replay_test(sub, common)
    whatif_args.add_diff(sub, common)
    whatif_args.add_fork(sub, common)
    whatif_args.add_eval(sub, common)
    audit_args.add_parser(sub, common).set_defaults(
        func=Command("controlroom.api.audit_cli", "run_audit", with_context=True)
    )
    conference_args.add_parser(sub, common).set_defaults(
        func=Command("controlroom.api.conference_cli", "run_conference", with_context=True)
    )
    plans_args.add_parser(sub, common).set_defaults(
        func=Command("controlroom.api.plans_cli", "run_plan_command", with_context=True)
    )
    inspect_args.add_export(sub, common)
    serve_args.add_serve(sub, common)
    catalog_args.add_models(sub, common)
    serve_args.add_projections(sub, common)
    catalog_args.add_workspace(sub, common)
    serve_args.add_analytics(sub, common)
    telemetry_args.add_parser(sub, common)
    issues_args.add_parser(sub, common).set_defaults(
        func=Command("controlroom.api.issues_cli", "run_issues_command", with_context=True)
    )
    status_args.add_parser(sub, common).set_defaults(
        func=Command("controlroom.api.status_cli", "run_status_command", with_context=True)
    )
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


def _naming_the_store(exc: RunNotFoundError, ns: argparse.Namespace) -> RunNotFoundError:
    """The error, saying which store was searched: a run recorded in PostgreSQL and looked
    for from a shell without CONTROLROOM_STORE is otherwise a mystery."""
    workspace = getattr(ns, "workspace", None)
    if exc.store is not None or workspace is None:
        return exc
    from controlroom.eventstore.backend import location_of
    from controlroom.eventstore.config import store_env

    try:
        return RunNotFoundError(exc.run_id, location_of(store_env(Path(workspace))))
    except ControlRoomError:  # a store setting it cannot read: the error as it was
        return exc


def _main(argv: list[str] | None) -> int:
    ns = build_parser().parse_args(argv)
    as_json = getattr(ns, "output_format", "text") == "json"
    if as_json:
        ns.json = True

    def error(message: object, code: int, exc: BaseException | None = None) -> int:
        if as_json:
            kind = type(exc).__name__ if exc is not None else "Error"
            report = {"error": str(message), "error_type": kind, "exit_code": code}
            print(json.dumps(report), file=sys.stderr)
        else:
            print(f"controlroom: error: {message}", file=sys.stderr)
        return code

    try:
        if getattr(ns, "run_id", None):
            from controlroom.api.limits import check_id

            check_id(ns.run_id, "RUN_ID")
        code: int = ns.func(ns)
    except RunNotFoundError as exc:
        return error(_naming_the_store(exc, ns), EXIT_BAD_INPUT, exc)
    except (BadInputError, RunStateError, PlanStateError) as exc:
        return error(exc, EXIT_BAD_INPUT, exc)
    except RunConflictError as exc:
        return error(exc, EXIT_CONFLICT, exc)
    except ControlRoomError as exc:
        fault = store_fault(exc)
        return error(fault or exc, EXIT_STORE_FAULT if fault else EXIT_FAILED, exc)
    except Exception as exc:
        if type(exc).__name__ == "MapperDeserialisationError":
            return error(
                f"the run's stored events cannot be read ({exc}); "
                "locate the damage with `controlroom replay RUN_ID --verify`",
                EXIT_FAILED,
                exc,
            )
        fault = store_fault(exc)  # disk full, read-only, locked: words, not a traceback
        if fault is None:
            raise
        if os.environ.get("CONTROLROOM_DEBUG"):  # the operator asked for the whole story
            traceback.print_exc()
        return error(fault, EXIT_STORE_FAULT, exc)
    return code


if __name__ == "__main__":
    sys.exit(main())
