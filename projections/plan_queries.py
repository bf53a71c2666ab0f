"""Questions about session plans, answered from the plans projection as typed views."""

from __future__ import annotations

import threading

from controlroom.domain.plan_errors import PlanNotFoundError
from controlroom.projections import plans
from controlroom.projections.db import Db
from controlroom.projections.plan_models import PlanDetail, PlanSummary

PLAN_STATUSES = ("draft", "approved", "running", "paused", "done", "failed")


class PlanQueries:
    def __init__(self, conn: Db, lock: threading.RLock) -> None:
        self.conn, self.lock = conn, lock

    def plans(self, status: str | None = None) -> list[PlanSummary]:
        with self.lock:
            rows = plans.list_plans(self.conn, status)
        return [PlanSummary.model_validate(row) for row in rows]

    def plan(self, plan_id: str) -> PlanDetail:
        with self.lock:
            found = plans.load_plan(self.conn, plan_id)
        if found is None:
            raise PlanNotFoundError(plan_id)
        return PlanDetail.model_validate(found)

    def unreviewed(self) -> list[str]:
        """Plans with a finished task the Chief has not reviewed yet."""
        with self.lock:
            return plans.unreviewed_plans(self.conn)
