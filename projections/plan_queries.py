"""Questions about session plans, answered from the plans projection as typed views."""

from __future__ import annotations

import threading

from controlroom.domain.errors import BadInputError
from controlroom.domain.plan_errors import PlanNotFoundError
from controlroom.projections import conferences, plans
from controlroom.projections.conference_models import RoundDetail, RoundSummary
from controlroom.projections.db import Db
from controlroom.projections.plan_models import PlanDetail, PlanSummary

PLAN_STATUSES = ("draft", "approved", "running", "paused", "done", "failed")


class ConferenceQueries:
    def __init__(self, conn: Db, lock: threading.RLock) -> None:
        self.conn, self.lock = conn, lock

    def rounds(self) -> list[RoundSummary]:
        with self.lock:
            rows = conferences.list_rounds(self.conn)
        return [RoundSummary.model_validate(r) for r in rows]

    def round(self, round_id: str) -> RoundDetail:
        with self.lock:
            found = conferences.load_round(self.conn, round_id)
        if found is None:
            raise RoundNotFoundError(round_id)
        return RoundDetail.model_validate(found)


class RoundNotFoundError(BadInputError):
    def __init__(self, round_id: str) -> None:
        super().__init__(f"no conference round '{round_id}'")


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
