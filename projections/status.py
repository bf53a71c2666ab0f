"""The status projection: per pipeline target (seed 002), the current iteration's run with
each step's state, the archived iterations, blockers and escalations.

A run is a pipeline's when its recipe snapshot (on `RunStarted`) has an `iteration` block;
its target is the recipe id with the task args the block names (`domain/iteration.py`),
and the target's id is its `Iteration` aggregate's. Each run's fold is kept in
`pipeline_runs`; each target's row in `pipelines` holds its history (from
`IterationArchived`) and which run is current, with the log position and time of the last
event that changed it: the STATUS.md export (`engine/status_export.py`) writes the file
again when that position moves. The export's own events go to `status_exports` and move
no target's position (the file's state is not part of its text).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar

import orjson

from controlroom.domain.flow_events import FlowDecided
from controlroom.domain.iteration import IterationArchived, iteration_id, target_of
from controlroom.domain.run_events import (
    HumanAnswered,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunRetried,
    RunStarted,
    StepCompleted,
    StepFailed,
    StepStarted,
    StepWaiting,
)
from controlroom.domain.status_report import (
    STATUS_EXPORT_EVENTS,
    StatusExported,
    StatusExportFailed,
    StatusExportIntended,
)
from controlroom.projections.base import Projection, Recorded
from controlroom.projections.db import Db

log = logging.getLogger("controlroom.projections")

_RUN_EVENTS = frozenset(
    cls.type_name
    for cls in (
        RunStarted,
        StepStarted,
        StepCompleted,
        StepFailed,
        StepWaiting,
        HumanAnswered,
        FlowDecided,
        RunRetried,
        RunCompleted,
        RunFailed,
        RunCancelled,
    )
)
_IDS_PER_QUERY = 500
#: How much of a failure, a reason or a gap analysis the view keeps.
MAX_DETAIL = 600
MAX_GAP = 2_000
#: What a rung records beyond kind, subject and models, kept in the view as facts.
_RUNG_FACTS = ("gate", "n", "of", "owner", "by", "skipped", "failure_kind")


class StatusProjection(Projection):
    name: ClassVar[str] = "status"
    topics: ClassVar[frozenset[str] | None] = (
        _RUN_EVENTS | {IterationArchived.type_name} | STATUS_EXPORT_EVENTS
    )
    version: ClassVar[int] = 1
    tables: ClassVar[tuple[str, ...]] = ("pipelines", "pipeline_runs", "status_exports")
    schema: ClassVar[tuple[str, ...]] = (
        """CREATE TABLE IF NOT EXISTS pipelines (
            target_id TEXT PRIMARY KEY, target TEXT NOT NULL, recipe_id TEXT NOT NULL,
            updated_at TEXT NOT NULL, position INTEGER NOT NULL, data BLOB NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS pipelines_by_position ON pipelines (position)",
        """CREATE TABLE IF NOT EXISTS pipeline_runs (
            run_id TEXT PRIMARY KEY, target_id TEXT NOT NULL, data BLOB NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS status_exports (
            report_id TEXT PRIMARY KEY, data BLOB NOT NULL)""",
    )

    def apply(self, conn: Db, batch: Sequence[Recorded]) -> None:
        fold = _Batch(conn)
        fold.load_runs({i.originator_id for i in batch if i.type_name in _RUN_EVENTS})
        for item in batch:
            try:
                data = item.decode()
            except Exception as exc:  # one unreadable event must not stop every pipeline
                log.warning(
                    "event %s v%s cannot be read: %s", item.originator_id, item.version, exc
                )
                continue
            try:
                fold.apply(item, data)
            except Exception as exc:
                log.warning(
                    "event %s v%s (%s) cannot be folded into the status: %r",
                    item.originator_id,
                    item.version,
                    item.type_name,
                    exc,
                )
        fold.write()


class _Batch:
    """The rows one batch touches, loaded once and written once."""

    def __init__(self, conn: Db) -> None:
        self.conn = conn
        #: run id -> its fold; None: not a pipeline's run.
        self.runs: dict[str, dict[str, Any] | None] = {}
        self.pipelines: dict[str, dict[str, Any]] = {}
        self.exports: dict[str, dict[str, Any]] = {}
        self.changed_runs: set[str] = set()
        self.changed_pipelines: set[str] = set()

    def load_runs(self, run_ids: set[str]) -> None:
        ids = sorted(run_ids)
        self.runs.update(dict.fromkeys(ids))
        for start in range(0, len(ids), _IDS_PER_QUERY):
            chunk = ids[start : start + _IDS_PER_QUERY]
            rows = self.conn.execute(
                f"SELECT run_id, data FROM pipeline_runs "
                f"WHERE run_id IN ({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
            self.runs.update((run_id, orjson.loads(data)) for run_id, data in rows)

    def pipeline(self, target_id: str) -> dict[str, Any] | None:
        if target_id not in self.pipelines:
            row = self.conn.execute(
                "SELECT data FROM pipelines WHERE target_id = ?", (target_id,)
            ).fetchone()
            if row is None:
                return None
            self.pipelines[target_id] = orjson.loads(row[0])
        return self.pipelines[target_id]

    def touch(self, pipeline: dict[str, Any], item: Recorded, at: str) -> None:
        pipeline["position"] = max(int(pipeline.get("position", 0)), item.position)
        pipeline["updated_at"] = at
        self.changed_pipelines.add(pipeline["target_id"])

    # -- events -------------------------------------------------------------------------

    def apply(self, item: Recorded, data: dict[str, Any]) -> None:
        at = str(data.get("timestamp", ""))
        name = item.type_name
        if name in STATUS_EXPORT_EVENTS:
            self._export(item, data, at)
        elif name == IterationArchived.type_name:
            self._archived(item, data, at)
        elif name == RunStarted.type_name:
            self._started(item, data, at)
        else:
            run = self.runs.get(item.originator_id)
            if run is None:
                return  # not a pipeline's run
            _fold_run(run, name, data, at)
            self.changed_runs.add(item.originator_id)
            pipeline = self.pipeline(run["target_id"])
            if pipeline is not None:
                self.touch(pipeline, item, at)

    def _started(self, item: Recorded, data: dict[str, Any], at: str) -> None:
        recipe = data.get("recipe") or {}
        spec = recipe.get("iteration")
        if not isinstance(spec, dict):
            self.runs[item.originator_id] = None
            return
        recipe_id = str(data.get("recipe_id") or recipe.get("recipe_id"))
        args = (data.get("task") or {}).get("args") or {}
        target = target_of(recipe_id, list(spec.get("key_args") or []), args)
        target_id = iteration_id(target)
        run_id = item.originator_id
        self.runs[run_id] = {
            "run_id": run_id,
            "target_id": target_id,
            "status": "running",
            "outcome": None,
            "error": None,
            "started_at": at,
            "ended_at": None,
            "current_step": None,
            "steps": _recipe_steps(recipe),
            "blockers": [],
            "escalations": [],
        }
        self.changed_runs.add(run_id)
        pipeline = self.pipeline(target_id) or self._new_pipeline(target_id, target, recipe_id)
        if run_id not in pipeline["runs"]:
            pipeline["runs"].append(run_id)
        pipeline["current_run_id"] = run_id
        pipeline["recipe_id"] = recipe_id
        self.touch(pipeline, item, at)

    def _new_pipeline(self, target_id: str, target: str, recipe_id: str) -> dict[str, Any]:
        pipeline: dict[str, Any] = {
            "target_id": target_id,
            "target": target,
            "recipe_id": recipe_id,
            "current_run_id": None,
            "runs": [],
            "history": [],
            "position": 0,
            "updated_at": "",
        }
        self.pipelines[target_id] = pipeline
        return pipeline

    def _archived(self, item: Recorded, data: dict[str, Any], at: str) -> None:
        target_id = item.originator_id
        pipeline = self.pipeline(target_id) or self._new_pipeline(
            target_id, str(data["target"]), str(data["recipe_id"])
        )
        deferred = list(data.get("deferred") or [])
        relaxed = list(data.get("relaxed") or [])
        gap = data.get("gap_analysis")
        row = {
            "number": int(data["number"]),
            "run_id": str(data["run_id"]),
            "result": str(data["result"]),
            "outcome": data.get("outcome"),
            "deferred": len(deferred),
            "relaxed": len(relaxed),
            "deferred_items": [_short_item(d) for d in deferred],
            "relaxed_items": [_short_item(r) for r in relaxed],
            "rungs": dict(data.get("rungs") or {}),
            "gap_analysis": _excerpt(gap, MAX_GAP) if isinstance(gap, str) else None,
            "archived_at": at,
            "archive": f"{target_id}#{int(data['number'])} (run {data['run_id']})",
        }
        history = [h for h in pipeline["history"] if h["run_id"] != row["run_id"]]
        history.append(row)
        history.sort(key=lambda h: (h["number"], h["archived_at"]))
        pipeline["history"] = history
        self.touch(pipeline, item, at)

    def _export(self, item: Recorded, data: dict[str, Any], at: str) -> None:
        report_id = item.originator_id
        if item.type_name == StatusExportIntended.type_name:
            return  # only its outcome shows
        row = self.exports.get(report_id) or {}
        if item.type_name == StatusExported.type_name:
            row = {
                "path": data["path"],
                "state": "exported",
                "at": at,
                "position": int(data["position"]),
                "sha256": data["sha256_after"],
                "problem": None,
            }
        elif item.type_name == StatusExportFailed.type_name:
            row = {
                "path": data["path"],
                "state": str(data["kind"]),
                "at": at,
                "position": int(data["position"]),
                "sha256": data.get("found"),
                "problem": _excerpt(str(data.get("reason", "")), MAX_DETAIL),
            }
        self.exports[report_id] = row

    # -- writing ------------------------------------------------------------------------

    def write(self) -> None:
        self.conn.executemany(
            self.conn.upsert("pipeline_runs", ("run_id", "target_id", "data"), ("run_id",)),
            [
                (run_id, run["target_id"], orjson.dumps(run))
                for run_id in sorted(self.changed_runs)
                if (run := self.runs.get(run_id)) is not None
            ],
        )
        columns = ("target_id", "target", "recipe_id", "updated_at", "position", "data")
        self.conn.executemany(
            self.conn.upsert("pipelines", columns, ("target_id",)),
            [
                (
                    p["target_id"],
                    p["target"],
                    p["recipe_id"],
                    p["updated_at"],
                    p["position"],
                    orjson.dumps(p),
                )
                for p in (self.pipelines[t] for t in sorted(self.changed_pipelines))
            ],
        )
        self.conn.executemany(
            self.conn.upsert("status_exports", ("report_id", "data"), ("report_id",)),
            [(report_id, orjson.dumps(row)) for report_id, row in sorted(self.exports.items())],
        )


def _recipe_steps(recipe: dict[str, Any]) -> list[dict[str, Any]]:
    """The recipe's steps in order, each pending."""
    steps: list[dict[str, Any]] = []
    for phase, default_kind in (("a", "tool"), ("b", "agent")):
        for spec in recipe.get(f"phase_{phase}") or []:
            if not isinstance(spec, dict):
                continue
            kind = str(spec.get("kind") or default_kind)
            steps.append(
                {
                    "index": len(steps),
                    "step_id": str(spec.get("step_id")),
                    "kind": kind,
                    "phase": phase,
                    "role": spec.get("agent_archetype") or spec.get("tool"),
                    "state": "pending",
                    "runs": 0,
                    "instance_id": None,
                    "detail": None,
                }
            )
    return steps


def _step(run: dict[str, Any], step_id: str) -> dict[str, Any] | None:
    steps: list[dict[str, Any]] = run["steps"]
    return next((step for step in steps if step["step_id"] == step_id), None)


def _fold_run(run: dict[str, Any], name: str, data: dict[str, Any], at: str) -> None:
    step = _step(run, str(data.get("step_id", "")))
    if name == StepStarted.type_name and step is not None:
        step.update(
            state="running",
            runs=step["runs"] + 1,
            instance_id=data.get("instance_id") or data["step_id"],
            detail=None,
        )
        run["current_step"] = step["step_id"]
    elif name == StepCompleted.type_name and step is not None:
        step.update(state="done", detail=None)
    elif name == StepFailed.type_name and step is not None:
        step.update(
            state="failed", detail=_excerpt(f"{data['error_type']}: {data['error']}", MAX_DETAIL)
        )
    elif name == StepWaiting.type_name and step is not None:
        awaiting = data.get("awaiting") or {}
        step.update(state="waiting", detail=_excerpt(str(data.get("reason", "")), MAX_DETAIL))
        if awaiting.get("kind") == "person":
            run["blockers"] = [
                b for b in run["blockers"] if b["instance_id"] != data["instance_id"]
            ] + [
                {
                    "step_id": data["step_id"],
                    "instance_id": data["instance_id"],
                    "issue_id": awaiting.get("issue_id"),
                    "owner": awaiting.get("owner"),
                    "reason": _excerpt(str(data.get("reason", "")), MAX_DETAIL),
                    "since": at,
                }
            ]
    elif name == HumanAnswered.type_name:
        run["blockers"] = [b for b in run["blockers"] if b["instance_id"] != data["instance_id"]]
        if step is not None:
            step.update(state="pending", detail=f"answered by {data.get('by', 'user')}: runs again")
    elif name == FlowDecided.type_name:
        _decided(run, data, at)
    elif name == RunRetried.type_name:
        for later in run["steps"][int(data["step_index"]) :]:
            later.update(state="pending", detail=None)
        run.update(status="running", outcome=None, error=None, ended_at=None, blockers=[])
    elif name in (RunCompleted.type_name, RunFailed.type_name, RunCancelled.type_name):
        _ended(run, name, data, at)


def _decided(run: dict[str, Any], data: dict[str, Any], at: str) -> None:
    rung = data.get("rung")
    if not isinstance(rung, dict):
        return
    kind = str(rung.get("kind"))
    subject = rung.get("subject")
    run["escalations"].append(
        {
            "kind": kind,
            "subject": subject,
            "from_model": rung.get("from_model"),
            "to_model": rung.get("to_model"),
            "reason": _excerpt(str(data.get("reason", "")), MAX_DETAIL),
            "at": at,
            "facts": {k: rung[k] for k in _RUNG_FACTS if rung.get(k) is not None},
        }
    )
    if kind == "deferred":
        skipped = [str(s) for s in rung.get("skipped") or []]
        for step_id in skipped or [str(subject)]:
            step = _step(run, step_id)
            if step is None:
                continue
            deferred = step_id == subject and step["runs"] > 0
            step.update(
                state="deferred" if deferred else "skipped",
                detail="deferred by triage" if deferred else "skipped: needs a deferred step",
            )
    elif kind == "accept" and isinstance(rung.get("gate"), str):
        gate = _step(run, rung["gate"])
        if gate is not None:
            gate.update(state="done", detail="advisory gate still fails: accepted, findings kept")
    elif kind == "rollback" and isinstance(subject, str):
        target = _step(run, subject)
        if target is not None:
            for later in run["steps"][target["index"] + 1 :]:
                if later["state"] != "pending":
                    later.update(state="pending", detail=f"rolled back to '{subject}'")


def _ended(run: dict[str, Any], name: str, data: dict[str, Any], at: str) -> None:
    outcome = data.get("outcome")
    if name == RunCompleted.type_name:
        outcome = 0 if outcome is None else outcome
        run["status"] = "partial" if outcome == 12 else "done"
    elif name == RunFailed.type_name:
        outcome = 1 if outcome is None else outcome
        run["status"] = "failed"
        run["error"] = _excerpt(str(data.get("error", "")), MAX_DETAIL)
    else:
        outcome = 20
        run["status"] = "cancelled"
        run["error"] = _excerpt(f"cancelled: {data.get('reason', '')}", MAX_DETAIL)
    run.update(outcome=outcome, ended_at=at, current_step=None, blockers=[])
    if name == RunCompleted.type_name:
        return
    for step in run["steps"]:
        if step["state"] in ("running", "waiting"):
            if name == RunFailed.type_name:
                step["state"] = "failed"
            else:
                step.update(state="pending", detail="the run was cancelled")


def _short_item(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        return {"detail": _excerpt(str(item), MAX_DETAIL)}
    return {k: _excerpt(v, MAX_DETAIL) if isinstance(v, str) else v for k, v in item.items()}


def _excerpt(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# -- reads -------------------------------------------------------------------------------------


def list_pipelines(conn: Db) -> list[dict[str, Any]]:
    """Every target's row, by target."""
    rows = conn.execute("SELECT data FROM pipelines ORDER BY target, target_id").fetchall()
    return [orjson.loads(data) for (data,) in rows]


def load_pipeline(conn: Db, target_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT data FROM pipelines WHERE target_id = ?", (target_id,)).fetchone()
    return orjson.loads(row[0]) if row else None


def load_run(conn: Db, run_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT data FROM pipeline_runs WHERE run_id = ?", (run_id,)).fetchone()
    return orjson.loads(row[0]) if row else None


def status_position(conn: Db) -> int:
    """The log position of the last event that changed any pipeline's status (0: none)."""
    (position,) = conn.execute("SELECT COALESCE(MAX(position), 0) FROM pipelines").fetchone()
    return int(position)


def load_export(conn: Db, report_id: str) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT data FROM status_exports WHERE report_id = ?", (report_id,)
    ).fetchone()
    return orjson.loads(row[0]) if row else None
