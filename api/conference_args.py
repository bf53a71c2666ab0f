"""`controlroom conference "QUESTION"`: a conference round, its transcript printed live.

    controlroom conference "Is Kael consistent with his card?" [--roles continuity,critic]
        [--allow-tools file_locator,canon_checker] [--require-tool] [--json]
    controlroom conference --list | --show ROUND_ID

Exit codes: 0 the round closed (whatever the replies were), 1 it failed (a model or the
tool policy), 64 bad input (an unknown tool, a role named twice).
"""

from __future__ import annotations

import argparse
from typing import Any

DEFAULT_ROLES = "continuity,critic,planner,writer,editor"


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "conference",
        parents=[common],
        help="a conference round: tools gather evidence, every role interprets it",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("question", nargs="?", help="the user's message")
    p.add_argument(
        "--roles", default=DEFAULT_ROLES, help=f"comma-separated (default {DEFAULT_ROLES})"
    )
    p.add_argument("--allow-tools", default="", help="comma-separated; default: every tool")
    p.add_argument("--require-tool", action="store_true", help="the Chief must call a tool")
    p.add_argument("--list", action="store_true", help="every round so far")
    p.add_argument("--show", metavar="ROUND_ID", help="one round's transcript")
    return p
