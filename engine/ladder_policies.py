"""The ladder's last rung, as tracked policies: a step waiting for a person opens a
`needs_human` issue with the ladder's story; the person's answer to it continues the run."""

from __future__ import annotations

from controlroom.domain.events import DomainEvent
from controlroom.domain.issue import Issue, IssueAnswered
from controlroom.domain.run import Run
from controlroom.domain.run_events import RunCancelled, StepWaiting
from controlroom.engine.policies import Unit


class NeedsHumanIssuePolicy:
    """A step waiting for a person opens its `needs_human` issue (once); a run cancelled
    while it waits closes it, saying so: nobody is left waiting for the answer."""

    name = "policy.needs_human_issues"
    follows = frozenset({StepWaiting.type_name, RunCancelled.type_name})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        if isinstance(event, RunCancelled):
            self._cancelled(event, unit)
            return
        assert isinstance(event, StepWaiting)
        awaiting = event.awaiting
        issue_id = awaiting.get("issue_id")
        if awaiting.get("kind") != "person" or not isinstance(issue_id, str):
            return
        if unit.get(Issue, issue_id) is not None:
            return  # opened already (the policy reacting again)
        run = unit.get(Run, event.originator_id)
        if run is None or run.recipe is None:
            return
        unit.add(
            Issue.open(
                issue_id,
                event.timestamp,
                kind="needs_human",
                title=f"Needs a person: step '{event.step_id}' of {run.recipe.recipe_id} "
                f"still fails after its escalation ladder",
                detail=event.reason,
                run_id=run.id,
                session_id=run.session_id,
                recipe_id=run.recipe.recipe_id,
                check={"step_id": event.step_id, "instance_id": event.instance_id},
                evidence={"owner": awaiting.get("owner"), "instance_id": event.instance_id},
            )
        )

    @staticmethod
    def _cancelled(event: RunCancelled, unit: Unit) -> None:
        run = unit.get(Run, event.originator_id)
        if run is None:
            return
        waits = [w for w in run.waits if w.get("kind") == "person"]
        for wait in waits:
            issue = unit.get(Issue, str(wait.get("issue_id")))
            if issue is not None and issue.status == "open":
                issue.close(event.timestamp, f"the run was cancelled: {event.reason}", by=NAME)
                unit.add(issue)


NAME = NeedsHumanIssuePolicy.name


class HumanAnswerPolicy:
    """A person's answer to a `needs_human` issue continues the waiting step (once: a run
    no longer waiting on that instance records nothing)."""

    name = "policy.human_answers"
    follows = frozenset({IssueAnswered.type_name})

    def react(self, event: DomainEvent, unit: Unit) -> None:
        assert isinstance(event, IssueAnswered)
        issue = unit.get(Issue, event.originator_id)
        if issue is None or issue.run_id is None or not issue.check:
            return
        run = unit.get(Run, issue.run_id)
        instance = str(issue.check.get("instance_id", ""))
        if run is not None and run.answer(
            event.timestamp,
            instance,
            event.resolution,
            event.by,
            issue_id=issue.id,
            model=event.model,
        ):
            unit.add(run)
