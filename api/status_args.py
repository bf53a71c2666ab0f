"""`controlroom status`: the status of the pipelines (seed 002's STATUS.md), from the status
projection.

controlroom status                 every pipeline target, as STATUS.md shows it
controlroom status TARGET_ID       one target (its id: `itr_…`, as listed)
controlroom status --json          the typed views (GET /api/pipelines/{id} for each)
controlroom status --export        write control-room-reports/STATUS.md now, also after a
                                   conflict once the edited file is removed (exit 75 while
                                   it is still not written)
"""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "status",
        parents=[common],
        help="the pipelines' status: iteration, phases, blockers, history (as STATUS.md)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("target_id", nargs="?", help="one pipeline target (default: every one)")
    p.add_argument(
        "--export",
        action="store_true",
        help="write control-room-reports/STATUS.md now (never over someone else's edit)",
    )
    return p
