"""Control Room's and raw `eventsourcing`'s workload, in the project's own venv.

`controlroom`: the `trivial_steps` recipe (8 `noop` tool steps) as `bench/suite.py` runs it:
its workspace, store, tool and service, runs awaited one after another on one event loop.
`raw`: `bench/suite.py`'s raw save: an aggregate saved, then one small event saved per step.
"""

from __future__ import annotations

import sys
from pathlib import Path
from uuid import UUID

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/, for suite

import suite
import timing
from eventsourcing.application import Application

from controlroom.domain.run import RunStatus
from controlroom.engine import event_loop
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore.config import store_env
from controlroom.eventstore.postgres import prepared_schema

RECIPE = str(suite.TRIVIAL["recipe_id"])


def controlroom(spec: str, seconds: float) -> None:
    with suite.workspace_copy() as workspace:
        ctx = suite.open_ctx(workspace, spec)
        service = RunService(ctx)

        async def runs(clock: timing.Clock | None) -> None:
            count = 0
            while clock.more() if clock else count < timing.WARM_UP_RUNS:
                final = await service.execute(service.start(RunRequest(RECIPE, {})))
                assert final.status == RunStatus.DONE, final.error
                assert final.total_steps == timing.STEPS, final.total_steps
                count += 1

        event_loop.run(runs(None))
        clock = timing.Clock(seconds)
        event_loop.run(runs(clock))
        events = ctx.store.max_position()  # positions: on PostgreSQL a sequence may skip
        ctx.close()
    clock.report(events, f"events {events}")


def raw(spec: str, seconds: float) -> None:
    with suite.workspace_copy() as workspace:
        env = dict(store_env(workspace, spec))
        with prepared_schema(env):
            app = Application[UUID](env=env)

        def run() -> None:
            counter = suite.Counter()
            app.save(counter)
            for index in range(timing.STEPS):
                counter.step(index)
                app.save(counter)

        for _ in range(timing.WARM_UP_RUNS):
            run()
        clock = timing.Clock(seconds)
        while clock.more():
            run()
        events = app.recorder.max_notification_id() or 0
        app.close()
    clock.report(events, f"events {events}")


def main() -> None:
    parser = timing.arguments(__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["controlroom", "raw"])
    parser.add_argument("--postgres", help="base DSN: PostgreSQL in a scratch schema, dropped")
    ns = parser.parse_args()
    spec = suite.fresh_store_spec("postgres" if ns.postgres else "sqlite", ns.postgres)
    try:
        (controlroom if ns.kind == "controlroom" else raw)(spec, ns.seconds)
    finally:
        suite.drop_schema(spec)


if __name__ == "__main__":
    main()
