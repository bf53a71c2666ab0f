"""Questions about pipelines' status, answered from the status projection as typed views."""

from __future__ import annotations

import re
import threading
from typing import Any

from controlroom.domain.errors import BadInputError
from controlroom.domain.status_report import STATUS_PATH, status_report_id
from controlroom.projections import status
from controlroom.projections.db import Db
from controlroom.projections.status_models import (
    CurrentRun,
    ExportState,
    PipelineDetail,
    PipelineSummary,
)

#: What a target id looks like (`domain/iteration.py`'s `iteration_id`).
TARGET_ID = re.compile(r"itr_[0-9a-f]{24}")


class PipelineNotFoundError(BadInputError):
    def __init__(self, target_id: str) -> None:
        self.target_id = target_id
        super().__init__(
            f"no pipeline '{target_id}' (list them with `controlroom status` or GET /api/pipelines)"
        )


class StatusQueries:
    def __init__(self, conn: Db, lock: threading.RLock) -> None:
        self.conn, self.lock = conn, lock

    def pipelines(self) -> list[PipelineSummary]:
        """Every pipeline target, by target."""
        return [_summary(d) for d in self.details()]

    def pipeline(self, target_id: str) -> PipelineDetail:
        with self.lock:
            return self._detail(self._row(target_id))

    def run_ids(self, target_id: str) -> set[str]:
        """Every run of the target so far (each an iteration, or one being run)."""
        with self.lock:
            row = self._row(target_id)
        return set(row["runs"]) | {h["run_id"] for h in row["history"]}

    def details(self) -> list[PipelineDetail]:
        with self.lock:
            return [self._detail(row) for row in status.list_pipelines(self.conn)]

    def position(self) -> int:
        """The log position of the last event that changed any pipeline's status."""
        with self.lock:
            return status.status_position(self.conn)

    def snapshot(self) -> tuple[int, list[PipelineDetail]]:
        """The status of every target and the log position it is as of, read together."""
        with self.lock:
            return status.status_position(self.conn), self.details()

    def export(self, path: str = STATUS_PATH) -> ExportState | None:
        with self.lock:
            row = status.load_export(self.conn, status_report_id(path))
        return ExportState.model_validate(row) if row else None

    def _row(self, target_id: str) -> dict[str, Any]:
        found = (
            status.load_pipeline(self.conn, target_id) if TARGET_ID.fullmatch(target_id) else None
        )
        if found is None:
            raise PipelineNotFoundError(target_id[:100])
        return found

    def _detail(self, row: dict[str, Any]) -> PipelineDetail:
        run_id = row.get("current_run_id")
        run = status.load_run(self.conn, run_id) if run_id else None
        history = row["history"]
        numbers = {h["run_id"]: h["number"] for h in history}
        if run_id in numbers:
            iteration = numbers[run_id]
        elif run_id:
            iteration = len(numbers) + 1
        else:
            iteration = max(numbers.values(), default=0)
        current = None
        if run is not None:
            fields = {k: v for k, v in run.items() if k != "target_id"}
            if fields["status"] == "running" and fields["blockers"]:
                fields["status"] = "waiting"  # for a person
            current = CurrentRun.model_validate(fields)
        return PipelineDetail(
            target_id=row["target_id"],
            target=row["target"],
            recipe_id=row["recipe_id"],
            iteration=iteration,
            updated_at=row["updated_at"],
            position=row["position"],
            current=current,
            history=history,
            export=self.export(),
        )


def _summary(detail: PipelineDetail) -> PipelineSummary:
    current = detail.current
    return PipelineSummary(
        target_id=detail.target_id,
        target=detail.target,
        recipe_id=detail.recipe_id,
        iteration=detail.iteration,
        run_id=current.run_id if current else None,
        run_status=current.status if current else None,
        current_step=current.current_step if current else None,
        blockers=len(current.blockers) if current else 0,
        escalations=len(current.escalations) if current else 0,
        iterations=len(detail.history),
        last_result=detail.history[-1].result if detail.history else None,
        updated_at=detail.updated_at,
    )
