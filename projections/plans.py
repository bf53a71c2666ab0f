"""The plans projection: every session plan with each task's derived state, run and review.

A plan's events are kept (plans are small: tens of events) and its view is folded by the
domain's own `SessionPlan`, so the read side never re-implements the six task states.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar

import orjson

from controlroom.domain.events import EVENT_TYPES, DomainEvent
from controlroom.domain.plan import PLAN_EVENT_TYPES, SessionPlan
from controlroom.domain.plan_events import PlanCreated, PlanFinished, TaskFinished
from controlroom.projections.base import Projection, Recorded
from controlroom.projections.db import Db

log = logging.getLogger("controlroom.projections")
_PLAN_COLUMNS = ("plan_id", "status", "created_at", "updated_at", "data")
_EVENT_COLUMNS = ("plan_id", "version", "type_name", "data")


class PlansProjection(Projection):
    name: ClassVar[str] = "plans"
    topics: ClassVar[frozenset[str] | None] = PLAN_EVENT_TYPES
    version: ClassVar[int] = 3
    tables: ClassVar[tuple[str, ...]] = ("plans", "plan_events")
    schema: ClassVar[tuple[str, ...]] = (
        """CREATE TABLE IF NOT EXISTS plans (
            plan_id TEXT PRIMARY KEY, status TEXT NOT NULL, created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL, data BLOB NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS plans_by_created ON plans (created_at, plan_id)",
        """CREATE TABLE IF NOT EXISTS plan_events (
            plan_id TEXT NOT NULL, version INTEGER NOT NULL, type_name TEXT NOT NULL,
            data BLOB NOT NULL, PRIMARY KEY (plan_id, version))""",
    )

    def apply(self, conn: Db, batch: Sequence[Recorded]) -> None:
        touched: dict[str, None] = {}
        rows = []
        for item in batch:
            try:
                data = item.decode()
            except Exception as exc:  # one unreadable event must not stop every plan
                log.warning(
                    "plan event %s v%s cannot be read: %s", item.originator_id, item.version, exc
                )
                continue
            rows.append((item.originator_id, item.version, item.type_name, orjson.dumps(data)))
            touched[item.originator_id] = None
        conn.executemany(conn.upsert("plan_events", _EVENT_COLUMNS, ("plan_id", "version")), rows)
        views = [v for v in (_fold(conn, plan_id) for plan_id in touched) if v is not None]
        conn.executemany(
            conn.upsert("plans", _PLAN_COLUMNS, ("plan_id",)),
            [
                (v["plan_id"], v["status"], v["created_at"], v["updated_at"], orjson.dumps(v))
                for v in views
            ],
        )


def _fold(conn: Db, plan_id: str) -> dict[str, Any] | None:
    rows = conn.execute(
        "SELECT type_name, data FROM plan_events WHERE plan_id = ? ORDER BY version", (plan_id,)
    ).fetchall()
    events: list[DomainEvent] = []
    for type_name, data in rows:
        events.append(EVENT_TYPES.get(type_name).model_validate(orjson.loads(data)))
    plan = SessionPlan.project(None, events)
    if plan is None or not events or not isinstance(events[0], PlanCreated):
        return None
    return plan_view(plan, events)


def plan_view(plan: SessionPlan, events: Sequence[DomainEvent]) -> dict[str, Any]:
    created = events[0]
    assert isinstance(created, PlanCreated)
    details = {e.task_id: e.detail for e in events if isinstance(e, TaskFinished)}
    finished = [e for e in events if isinstance(e, PlanFinished)]
    tasks = []
    for task_id, state in plan.states().items():
        task = plan.tasks[task_id]
        review = plan.reviews.get(task_id)
        tasks.append(
            {
                "task_id": task_id,
                "description": task.description,
                "recipe_id": task.recipe_id,
                "args": task.args,
                "deps": task.deps,
                "dod": task.dod,
                "state": state.value,
                "scoping_question": task.scoping_question if state == "needs_scoping" else None,
                "choices": task.choices if state == "needs_scoping" else [],
                "answer": plan.answers.get(task_id),
                "run_id": plan.run_ids.get(task_id),
                "forced": task_id in plan.forced,
                "packet": task.packet,
                "outcome_detail": details.get(task_id),
                "review": (
                    {
                        "decision": review.decision,
                        "notes": review.notes,
                        "dod_passed": review.dod_passed,
                    }
                    if review
                    else None
                ),
                "review_failures": len(plan.review_failures.get(task_id, [])),
                "review_given_up": (
                    plan.abandoned_reviews[task_id].error
                    if task_id in plan.abandoned_reviews
                    else None
                ),
            }
        )
    return {
        "plan_id": plan.id,
        "intent": plan.intent,
        "status": plan.status.value,
        "session_id": plan.session_id,
        "created_by": created.created_by,
        "created_at": created.timestamp.isoformat(),
        "updated_at": events[-1].timestamp.isoformat(),
        "version": plan.version,
        "chief": created.chief,
        "summary": finished[-1].summary if finished and plan.is_finished else None,
        "tasks": tasks,
    }


# -- reads -------------------------------------------------------------------------------------


def load_plan(conn: Db, plan_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT data FROM plans WHERE plan_id = ?", (plan_id,)).fetchone()
    if row is None:
        return None
    view: dict[str, Any] = orjson.loads(row[0])
    for task in view["tasks"]:
        if task["run_id"]:
            found = (
                conn.execute(
                    "SELECT status FROM runs WHERE run_id = ?", (task["run_id"],)
                ).fetchone()
                if conn.table_exists("runs")
                else None
            )
            task["run_status"] = found[0] if found else None
    return view


def list_plans(conn: Db, status: str | None) -> list[dict[str, Any]]:
    where, params = ("WHERE status = ? ", [status]) if status else ("", [])
    rows = conn.execute(
        f"SELECT data FROM plans {where}ORDER BY created_at, plan_id", params
    ).fetchall()
    summaries = []
    for (data,) in rows:
        view = orjson.loads(data)
        states = [t["state"] for t in view["tasks"]]
        summaries.append(
            {
                "plan_id": view["plan_id"],
                "intent": view["intent"],
                "status": view["status"],
                "created_at": view["created_at"],
                "updated_at": view["updated_at"],
                "tasks": len(states),
                "done": states.count("done"),
                "failed": states.count("failed"),
                "needs_scoping": states.count("needs_scoping"),
            }
        )
    return summaries


def unreviewed_plans(conn: Db) -> list[str]:
    """Plans with a finished task the Chief has not reviewed yet."""
    rows = conn.execute(
        "SELECT plan_id, data FROM plans WHERE status <> 'draft' ORDER BY created_at, plan_id"
    ).fetchall()
    return [
        plan_id
        for plan_id, data in rows
        if any(
            t["state"] in ("done", "failed")
            and t["review"] is None
            and t.get("review_given_up") is None
            for t in orjson.loads(data)["tasks"]
        )
    ]
