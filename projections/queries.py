"""The one read side: every question the CLI and HTTP ask, answered from the projections as
typed view models. Neither reads a table or folds events for itself."""

from __future__ import annotations

import threading
from typing import Any

from controlroom.domain.errors import IssueNotFoundError, RunNotFoundError
from controlroom.projections import issues, runs, runs_list
from controlroom.projections.db import Db
from controlroom.projections.models import (
    ArtifactSlot,
    IssueDetail,
    IssueView,
    PointerSlot,
    RunDetail,
    RunSummary,
    StepView,
    TrailEntry,
)
from controlroom.projections.run_tree import add_totals
from controlroom.projections.run_view import RunView, one_line


class Queries:
    def __init__(self, conn: Db, lock: threading.RLock) -> None:
        self.conn, self.lock = conn, lock

    def runs(
        self,
        status: str | None = None,
        recipe_id: str | None = None,
        limit: int | None = None,
        before: str | None = None,
    ) -> list[RunSummary]:
        """Every run that matches, oldest first; with `limit`, the newest `limit` of those
        created before the run `before` (which must exist)."""
        with self.lock:
            if before is not None and not runs_list.has_run(self.conn, before):
                raise RunNotFoundError(before)
            rows = runs.list_runs(self.conn, status, recipe_id, limit, before)
        return [RunSummary.model_validate(row) for row in rows]

    def any_runs_before(self, status: str | None, recipe_id: str | None, before: str) -> bool:
        with self.lock:
            return runs_list.any_before(self.conn, status, recipe_id, before)

    def count_runs(
        self, status: str | None = None, recipe_id: str | None = None, before: str | None = None
    ) -> int:
        with self.lock:
            return runs_list.count_runs(self.conn, status, recipe_id, before)

    def run(self, run_id: str) -> RunDetail:
        view = add_totals(self._view(run_id).consolidated(), self.state_of, run_id)
        return RunDetail.model_validate(view)

    def state_of(self, run_id: str) -> dict[str, Any] | None:
        """A run's folded state (`RunView.to_state()`), None when there is no such run."""
        with self.lock:
            view = runs.load_view(self.conn, run_id)
        return None if view is None else view.to_state()

    def run_status(self, run_id: str) -> str | None:
        """The run's status, None when there is no such run: a cheap check for callers."""
        with self.lock:
            return runs.run_status(self.conn, run_id)

    def steps(self, run_id: str) -> list[StepView]:
        return [StepView.model_validate(step) for step in self._view(run_id).step_log()]

    def slot(self, run_id: str, slot: str) -> PointerSlot | ArtifactSlot | None:
        """A pointer's metadata or an artifact's full text; None when the run has no such
        slot."""
        found = self._view(run_id).slots.get(slot)
        if found is None:
            return None
        if found["type"] == "pointer":
            return PointerSlot(
                slot=slot,
                receipt_id=found["receipt_id"],
                sha256=found["sha256"],
                summary=found["summary"],
            )
        with self.lock:
            text = runs.artifact_text(self.conn, run_id, slot)
        return ArtifactSlot(
            slot=slot,
            agent_id=found["agent_id"],
            text=text or "",
            sha256=found["sha256"],
            summary=one_line(found["summary"]),
        )

    def issues(self, run_id: str | None = None, status: str | None = None) -> list[IssueView]:
        with self.lock:
            rows = issues.list_issues(self.conn, run_id, status)
        return [IssueView.model_validate(row) for row in rows]

    def run_trail(self, run_id: str) -> list[TrailEntry]:
        """The run's audit trail: packets, receipts (agents' and tools'), STOP_HOOKs."""
        self.run_status(run_id) or self._view(run_id)  # 404 for a run that does not exist
        with self.lock:
            rows = issues.run_trail(self.conn, run_id)
        return [TrailEntry.model_validate(row) for row in rows]

    def issue_detail(self, issue_id: str) -> IssueDetail:
        """The issue and its audit trail (its runs' packets, receipts and STOP_HOOKs)."""
        issue = self.issue(issue_id)
        with self.lock:
            trail = issues.issue_trail(self.conn, issue_id)
        return IssueDetail.model_validate({**issue.model_dump(), "trail": trail})

    def receipt_report(self, issue_id: str, receipt_id: str) -> str:
        """A receipt's full report, if the receipt is in the issue's trail."""
        with self.lock:
            in_trail = any(
                e.get("receipt_id") == receipt_id for e in issues.issue_trail(self.conn, issue_id)
            )
            report = issues.receipt_report(self.conn, receipt_id) if in_trail else None
        if report is None:
            raise IssueNotFoundError(f"{issue_id}/{receipt_id} (no report)")
        return report

    def issue(self, issue_id: str) -> IssueView:
        with self.lock:
            row = issues.load_issue(self.conn, issue_id)
        if row is None:
            raise IssueNotFoundError(issue_id)
        return IssueView.model_validate(row)

    def view(self, run_id: str) -> RunView:
        """The run's fold itself (the page's run state reads it); RunNotFoundError if none."""
        return self._view(run_id)

    def _view(self, run_id: str) -> RunView:
        with self.lock:
            view = runs.load_view(self.conn, run_id)
        if view is None:
            raise RunNotFoundError(run_id)
        return view
