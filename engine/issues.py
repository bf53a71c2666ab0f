"""Commands people give on issues: comment, close with a reason, reopen. Each is an event;
a save that races a policy's reaction (a run finding the issue again) is decided again on
the new state, so nothing a person records is lost."""

from __future__ import annotations

from collections.abc import Callable

from eventsourcing.persistence import IntegrityError

from controlroom.domain.errors import IssueNotFoundError, RunConflictError
from controlroom.domain.issue import Issue
from controlroom.engine.context import Context

ATTEMPTS = 20


class IssueService:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def load(self, issue_id: str) -> Issue:
        issue = self.ctx.store.load(Issue, issue_id)
        if issue is None:
            raise IssueNotFoundError(issue_id)
        return issue

    def close(self, issue_id: str, reason: str) -> Issue:
        return self._change(issue_id, lambda i: i.close(self.ctx.clock.now(), reason))

    def reopen(self, issue_id: str, reason: str) -> Issue:
        return self._change(issue_id, lambda i: i.reopen(self.ctx.clock.now(), reason))

    def comment(self, issue_id: str, text: str) -> Issue:
        return self._change(issue_id, lambda i: i.comment(self.ctx.clock.now(), text))

    def answer(
        self, issue_id: str, resolution: str, by: str = "user", model: str | None = None
    ) -> Issue:
        """A person's resolution for a `needs_human` issue (and, if they name one, the model
        the step runs on next): a policy continues the run."""
        if model:
            self.ctx.agents.check_model(model)
        return self._change(
            issue_id, lambda i: i.answer(self.ctx.clock.now(), resolution, by, model)
        )

    def _change(self, issue_id: str, command: Callable[[Issue], None]) -> Issue:
        for _ in range(ATTEMPTS):
            issue = self.load(issue_id)
            command(issue)
            try:
                self.ctx.store.save(issue)
            except IntegrityError:
                continue
            return issue
        raise RunConflictError(issue_id)
