"""The arguments of `controlroom` commands implemented in api/inspect_cli.py; light to import:
`controlroom --help` builds every parser without loading what only a command's work needs."""

from __future__ import annotations

import argparse
from typing import Any

from controlroom.api.commands import Command
from controlroom.projections.statuses import RUN_STATUSES


def add_slot(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("slot", parents=[common], help="print one slot of a run in full")
    p.add_argument("run_id")
    p.add_argument("slot")
    p.set_defaults(func=Command("controlroom.api.inspect_cli", "cmd_slot"))


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
    p.set_defaults(func=Command("controlroom.api.quick_reads", "cmd_show"))


def add_runs(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("runs", parents=[common], help="list runs (the newest 100; --limit 0: all)")
    p.add_argument("--status", choices=RUN_STATUSES)
    p.add_argument("--recipe")
    p.add_argument(
        "--limit",
        type=_page_size,
        default=DEFAULT_RUNS_PAGE,
        metavar="N",
        help=f"show the newest N runs that match (default {DEFAULT_RUNS_PAGE}; 0 shows all)",
    )
    p.add_argument(
        "--before", metavar="RUN_ID", help="only runs created before this one (the next page)"
    )
    p.set_defaults(func=Command("controlroom.api.quick_reads", "cmd_runs"))


#: How many runs `controlroom runs` shows unless told: a store of 100k runs lists in
#: milliseconds, and the footer says how to see more.
DEFAULT_RUNS_PAGE = 100


def _page_size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 0 <= value <= 1_000_000:
        raise argparse.ArgumentTypeError("must be between 0 (all) and 1000000")
    return value


def add_events(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("events", parents=[common], help="a run's events, in order")
    p.add_argument("run_id")
    p.set_defaults(func=Command("controlroom.api.inspect_cli", "cmd_events"))


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
    p.set_defaults(func=Command("controlroom.api.inspect_cli", "cmd_replay"))


def add_export(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("export", parents=[common], help="write run.json, steps.jsonl, cache.json")
    p.add_argument("run_id")
    p.add_argument("--dir", required=True)
    p.add_argument(
        "--tree",
        action="store_true",
        help="the run and every run below it as seed 004's session directory (manifest, "
        ".signals, .live-report, phases/, sentinel/)",
    )
    p.set_defaults(func=Command("controlroom.api.inspect_cli", "cmd_export"))
