"""DBOS's workload, in its own venv (`dbos`).

A `@DBOS.workflow` calling 8 `@DBOS.step` functions, each returning a small dict, on DBOS's
documented setup: `DBOS(config=...)` with a system database URL (a SQLite file, or a
PostgreSQL database), then `DBOS.launch()`. DBOS records the workflow's status and inputs
when it starts, each step's output as the step returns, and the workflow's result at the end.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sqlalchemy as sa
import timing
from dbos import DBOS, DBOSConfig


@DBOS.step()
def step(index: int) -> dict[str, Any]:
    return timing.step_result(index)


@DBOS.workflow()
def workflow(start: int) -> list[dict[str, Any]]:
    return [step(index) for index in range(timing.STEPS)]


def main() -> None:
    parser = timing.arguments(__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="system database: sqlite:///FILE or DSN")
    ns = parser.parse_args()
    config: DBOSConfig = {"name": "peers-bench", "system_database_url": ns.url}
    DBOS(config=config)
    DBOS.launch()
    count = [0]

    def run() -> None:
        count[0] += 1
        result = workflow(count[0])
        assert result[-1] == timing.step_result(timing.STEPS - 1), result

    for _ in range(timing.WARM_UP_RUNS):
        run()
    clock = timing.Clock(ns.seconds)
    while clock.more():
        run()
    DBOS.destroy()
    engine = sa.create_engine(ns.url)
    prefix = "" if ns.url.startswith("sqlite") else "dbos."
    with engine.connect() as conn:
        workflows = conn.execute(sa.text(f"SELECT count(*) FROM {prefix}workflow_status"))
        outputs = conn.execute(sa.text(f"SELECT count(*) FROM {prefix}operation_outputs"))
        rows = (int(workflows.scalar_one()), int(outputs.scalar_one()))
    engine.dispose()
    clock.report(sum(rows), f"workflow_status {rows[0]} + operation_outputs {rows[1]}")


if __name__ == "__main__":
    main()
