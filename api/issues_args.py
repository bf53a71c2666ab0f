"""`controlroom issues`: what runs found, and its lifecycle.

controlroom issues [list] [--run RUN] [--status open|closed]
controlroom issues show ID [--full]       the issue, its history, its audit trail
controlroom issues close ID --reason "…"
controlroom issues reopen ID --reason "…"
controlroom issues comment ID "TEXT"
controlroom issues answer ID "RESOLUTION"  a needs_human issue: the waiting run goes on
                                           with the resolution (here, unless --no-continue)
"""

from __future__ import annotations

import argparse
from typing import Any

ACTIONS = ("list", "show", "close", "reopen", "comment", "answer")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "issues",
        parents=[common],
        help="issues opened by runs: list, show, close, reopen, comment",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", nargs="?", default="list", choices=ACTIONS)
    p.add_argument("issue_id", nargs="?", help="the issue (show, close, reopen, comment)")
    p.add_argument("text", nargs="?", help="comment: the text; answer: the resolution")
    p.add_argument(
        "--model",
        metavar="PROVIDER:MODEL",
        help="answer: the model the step runs on next (default: its ladder's strongest)",
    )
    p.add_argument(
        "--no-continue",
        action="store_true",
        help="answer: record the answer only; a worker or `resume` continues the run",
    )
    p.add_argument("--run", help="list: only the issues this run opened or found again")
    p.add_argument("--status", choices=["open", "closed"], help="list: only these")
    p.add_argument("--reason", help="close/reopen: why")
    p.add_argument("--full", action="store_true", help="show: every report in full")
    return p
