"""The "what if" commands' arguments (`replay-test`, `diff`), apart from
`api/whatif_cli.py` so that building the parser imports no engine."""

from __future__ import annotations

import argparse
from typing import Any

from controlroom.api.commands import Command


def add_replay_test(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "replay-test",
        parents=[common],
        help="re-execute recorded runs against their own recorded model replies",
        description=(
            "Each run is executed again in a scratch copy of the workspace (the source run "
            "and its store untouched), every model request answered from the run's own "
            "recorded replies by the request's sha256. Exit 0 when every replay reaches the "
            "same slots and DoD verdicts; 1 when one does not, or sends a request the "
            "recording does not hold (the step, both hashes and a diff of the request said)."
        ),
    )
    p.add_argument("run_ids", nargs="+", metavar="RUN")
    p.add_argument(
        "--keep",
        metavar="DIR",
        help="keep each replay's scratch workspace under DIR (default: removed afterwards)",
    )
    p.set_defaults(func=Command("controlroom.api.whatif_cli", "cmd_replay_test", with_context=True))


def add_diff(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "diff",
        parents=[common],
        help="compare two runs step by step: requests, outputs, verdicts, tokens, cost",
    )
    p.add_argument("run_a", metavar="RUN_A")
    p.add_argument("run_b", metavar="RUN_B")
    p.add_argument("--changed", action="store_true", help="list only the steps that differ")
    p.set_defaults(func=Command("controlroom.api.whatif_cli", "cmd_diff", with_context=True))


def add_fork(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "fork",
        parents=[common],
        help="a new run from a recorded one: its steps before STEP copied, the rest live",
        description=(
            "The steps before STEP are taken from the source run's recorded events (no tool "
            "or model called again, the source untouched); STEP and the steps after it run "
            "live with the changes given. The fork records what it changed. Compare the two "
            "with `controlroom diff RUN FORK`."
        ),
    )
    p.add_argument("run_id", metavar="RUN")
    p.add_argument("--from", dest="from_step", required=True, metavar="STEP")
    p.add_argument(
        "--prompt-file",
        action="append",
        default=[],
        metavar="TYPE=FILE",
        help="replace the template of a prompt type (every tier) with this file's text",
    )
    p.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="ROLE=PROVIDER:MODEL",
        help="serve a role (agent archetype) with another configured model",
    )
    p.add_argument(
        "--arg", action="append", default=[], metavar="KEY=VALUE", help="change a task arg"
    )
    p.set_defaults(func=Command("controlroom.api.whatif_cli", "cmd_fork", with_context=True))


def add_eval(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "eval",
        parents=[common],
        help="evaluate a prompt or model change over past runs (each forked, then compared)",
        description=(
            "Each selected run is forked at the first step the change touches and run on "
            "with it, in a scratch copy of the workspace (the manuscript and the source runs "
            "untouched); the report says per run and in total which verdicts flipped and "
            "what cost, tokens and latency did, and names the outputs that moved most. The "
            "eval is itself a run (recipe `eval`): killed, `controlroom resume` goes on "
            "without running a finished fork again. Select runs with --recipe/--status/"
            "--last, --run, or --runs-sql (an analytics query whose first column is run ids)."
        ),
    )
    p.add_argument(
        "--prompt-file",
        action="append",
        default=[],
        metavar="TYPE=FILE",
        help="replace a prompt type's template (every tier) with this file's text",
    )
    p.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="ROLE=PROVIDER:MODEL",
        help="serve a role with another configured model",
    )
    p.add_argument("--recipe", metavar="RECIPE", help="runs of this recipe only")
    p.add_argument(
        "--status",
        default="done",
        choices=["done", "failed", "any"],
        help="runs that ended so (default: done)",
    )
    p.add_argument(
        "--last",
        type=int,
        default=20,
        metavar="N",
        help="the N most recent matching runs (default 20, at most 200)",
    )
    p.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="RUN",
        help="this run (repeatable; instead of --recipe/--status/--last)",
    )
    p.add_argument(
        "--runs-sql", metavar="SQL", help="an analytics query whose first column holds the run ids"
    )
    p.add_argument(
        "--at-once", type=int, default=2, metavar="K", help="forks run at once (1-8, default 2)"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print only the outcome line")
    p.set_defaults(func=Command("controlroom.api.whatif_cli", "cmd_eval", with_context=True))
