"""`controlroom loops`: the loop registry (tier 1 of every Showrunner turn), generated from
the workspace's loop recipes, and the next loop proposed when a loop run has ended.

    controlroom loops                          every loop: purpose, inputs and outputs, scope,
                                               often follows / precedes, needs (and whether
                                               this install has them), then the registry's
                                               size against every loop's full definition
    controlroom loops next RUN_ID              the next loop proposed after RUN_ID's loop
    controlroom loops next RUN_ID --accept PLAN
                                               session plans cannot take a task once made:
                                               refused (exit 64), with the `plan create`
                                               command that plans the proposed loop

What a loop needs beyond text models is named by the install in CONTROLROOM_CAPABILITIES
(comma-separated; unset: none). The proposal is the offline Showrunner's, from tier 1 only
(the loop's often_precedes in order, then loops that often follow it, skipping those whose
needs are missing); no model is asked for it yet.

Exit codes: 0 done (also when nothing is proposed), 64 bad input (no such run, a run that
runs no loop or whose loop has not ended, --accept), 74 the store cannot be read.
"""

from __future__ import annotations

import argparse
from typing import Any

from controlroom.api.commands import Command


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "loops",
        parents=[common],
        help="the loop registry (tier 1), and the next loop after a loop run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", nargs="?", choices=["next"], help="next: the proposed next loop")
    p.add_argument("run_id", nargs="?", help="next: the loop run that ended")
    p.add_argument("--accept", metavar="PLAN_ID", help="next: add the proposal to a session plan")
    p.set_defaults(func=Command("controlroom.api.loops_cli", "run_loops_command"))
