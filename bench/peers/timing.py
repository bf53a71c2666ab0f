"""What every peer's workload shares. Standard library only: it runs in every peer's venv.

A workload runs a workflow of `STEPS` trivial durable steps `WARM_UP_RUNS` times untimed,
then again and again for at least `--seconds`, and prints one JSON line on stdout (the
last line: a peer may log on stdout before it):
`{"runs", "steps", "wall_s", "cpu_s", "rows", "rows_what", "all_steps"}` — `rows` is what
the peer's store holds at the end (warm-up included), over `all_steps` steps.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

STEPS = 8
WARM_UP_RUNS = 20


def step_result(index: int) -> dict[str, Any]:
    """A step's trivial work: a small dict."""
    return {"step": index, "ok": True}


def arguments(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seconds", type=float, default=4.0, help="timed part, at least")
    return parser


class Clock:
    """Counts whole runs until `seconds` have passed: `while clock.more(): run()`.

    Wall time by `perf_counter`, CPU time by `process_time` (every thread of the process;
    a database server's own CPU is not in it)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.runs = -1
        self.wall = self.cpu = 0.0

    def more(self) -> bool:
        if self.runs < 0:
            self.runs = 0
            self.cpu = time.process_time()
            self.wall = time.perf_counter()
            return True
        self.runs += 1
        elapsed = time.perf_counter() - self.wall
        if elapsed < self.seconds:
            return True
        self.wall = elapsed
        self.cpu = time.process_time() - self.cpu
        return False

    def report(self, rows: int, rows_what: str) -> None:
        all_steps = (WARM_UP_RUNS + self.runs) * STEPS
        figures = {
            "runs": self.runs,
            "steps": self.runs * STEPS,
            "wall_s": self.wall,
            "cpu_s": self.cpu,
            "rows": rows,
            "rows_what": rows_what,
            "all_steps": all_steps,
        }
        print(json.dumps(figures), flush=True)
