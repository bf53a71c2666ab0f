"""`controlroom plan`: session plans from one intent, approved and run by the user.

    controlroom plan create "INTENT"           the Chief's plan, as a draft to approve
    controlroom plan show PLAN | list          the plan with each task's state
    controlroom plan approve PLAN              nothing runs before this
    controlroom plan start PLAN [--queue]      run it here (or leave it to workers)
    controlroom plan pause PLAN | resume PLAN  at task boundaries; resume also continues a
                                               running plan whose process was stopped
    controlroom plan answer PLAN TASK "ANSWER" a scoping question (a choice's number or words)
    controlroom plan force-start PLAN TASK     a blocked task, at your own risk
    controlroom plan reorder PLAN 3,1,2        within dependency constraints
    controlroom plan remove PLAN TASK [--cascade]
    controlroom plan edit PLAN TASK "DESCRIPTION"
    controlroom plan add PLAN "DESCRIPTION" [--after 1,2]
                                               a new task, last, routed like the Chief's
                                               (it waits for --after, default the last task)
    controlroom plan export PLAN --dir DIR     appendix G: sessions/SESSION/plan.json

Exit codes: 0 done (or waiting for your answer), 1 a task failed, 64 bad input or a control
the plan's state does not allow, 75 a conflict. The Chief's review of a task never changes
the exit code: a review that fails is asked again a few times, then given up, and `start` /
`resume` say so on stderr (the task's own outcome stands).
"""

from __future__ import annotations

import argparse
from typing import Any

ACTIONS = (
    "create",
    "show",
    "list",
    "approve",
    "start",
    "pause",
    "resume",
    "answer",
    "force-start",
    "reorder",
    "remove",
    "edit",
    "add",
    "export",
)


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "plan",
        parents=[common],
        help="session plans: the Chief plans an intent, you approve, tasks run in order",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=ACTIONS)
    p.add_argument("target", nargs="?", help="the intent (create) or a plan id")
    p.add_argument("rest", nargs="*", help="TASK, and ANSWER / DESCRIPTION / ORDER")
    p.add_argument("--cascade", action="store_true", help="remove: also remove its dependants")
    p.add_argument("--queue", action="store_true", help="start/resume: leave runs to workers")
    p.add_argument("--reason", default="", help="pause: why")
    p.add_argument("--status", help="list: only plans with this status")
    p.add_argument("--dir", help="export: the folder to write sessions/SESSION/plan.json in")
    p.add_argument("--after", help="add: the tasks the new one waits for (e.g. 1,2; none: '')")
    p.add_argument("--quiet", "-q", action="store_true", help="no live progress")
    return p
