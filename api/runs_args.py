"""The arguments of `controlroom` commands implemented in api/runs_cli.py; light to import:
`controlroom --help` builds every parser without loading what only a command's work needs."""

from __future__ import annotations

import argparse
from typing import Any

from controlroom.api.commands import Command


def add_run(sub: Any, common: argparse.ArgumentParser) -> None:
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
    p.set_defaults(func=Command("controlroom.api.runs_cli", "cmd_run"))


def add_resume(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("resume", parents=[common], help="continue unfinished runs")
    p.add_argument("run_id", nargs="?")
    p.add_argument("--quiet", "-q", action="store_true")
    p.add_argument(
        "--here",
        action="store_true",
        help="continue a run started in another workspace in this one (that workspace moved)",
    )
    p.set_defaults(func=Command("controlroom.api.runs_cli", "cmd_resume"))


def add_retry(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("retry", parents=[common], help="continue a failed run from a step")
    p.add_argument("run_id")
    p.add_argument(
        "--from",
        dest="from_step",
        metavar="STEP_ID",
        help="the step to run again (default: the step that failed; or an earlier one)",
    )
    p.add_argument("--quiet", "-q", action="store_true")
    p.add_argument(
        "--here",
        action="store_true",
        help="continue a run started in another workspace in this one (that workspace moved)",
    )
    p.set_defaults(func=Command("controlroom.api.runs_cli", "cmd_retry"))


def add_cancel(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("cancel", parents=[common], help="cancel a running run")
    p.add_argument("run_id")
    p.add_argument("--reason", default="cancelled by user")
    p.set_defaults(func=Command("controlroom.api.runs_cli", "cmd_cancel"))
