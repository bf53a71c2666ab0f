"""Conference phase 2 runs its roles in parallel: with N roles at a simulated model latency,
phase 2 should take about one call's time, not N.

Prints, for N = 1 and N = 5 roles at 200 ms a call (offline model, SQLite store), the
median phase-2 wall time (from the evidence closing to every reply recorded, from the
round's own event timestamps) and its ratio to the median single-role phase 2 measured in
the same run.

    .venv/bin/python bench/conference_parallel.py [--rounds 5] [--latency-ms 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from controlroom.domain.conference import EvidenceClosed, RepliesCollected  # noqa: E402
from controlroom.engine.conference import ConferenceService, RoundRequest  # noqa: E402
from controlroom.engine.context import Context  # noqa: E402

ROLES = ["continuity", "critic", "planner", "writer", "editor"]
QUESTION = "Is Kael consistent with his canon card?"


def phase_two_seconds(ctx: Context, roles: list[str]) -> float:
    conference = asyncio.run(ConferenceService(ctx).run(RoundRequest(QUESTION, roles, [])))
    events = ctx.store.stream(conference.id)
    closed = next(e for e in events if isinstance(e, EvidenceClosed))
    collected = next(e for e in events if isinstance(e, RepliesCollected))
    return (collected.timestamp - closed.timestamp).total_seconds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    ns = parser.parse_args()
    os.environ["CONTROLROOM_OFFLINE_LATENCY_MS"] = str(ns.latency_ms)
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "novel"
        shutil.copytree(
            REPO / "examples" / "novel", workspace, ignore=shutil.ignore_patterns(".control-room")
        )
        ctx = Context.open(workspace)
        try:
            one, five = [], []
            for _ in range(ns.rounds):  # alternated: machine noise hits both alike
                one.append(phase_two_seconds(ctx, ROLES[:1]))
                five.append(phase_two_seconds(ctx, ROLES))
        finally:
            ctx.close()
    single, parallel = statistics.median(one), statistics.median(five)
    print(f"conference phase 2 at {ns.latency_ms:g} ms a call, median of {ns.rounds} rounds:")
    print(f"  1 role : {single * 1000:7.1f} ms")
    ratio = parallel / single
    print(f"  5 roles: {parallel * 1000:7.1f} ms  ({ratio:.2f}x one role; 5.00x if serial)")


if __name__ == "__main__":
    main()
