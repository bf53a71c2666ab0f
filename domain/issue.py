"""The Issue aggregate: something a run found that a person should look at."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.canonical import sha256_text
from controlroom.domain.events import DomainEvent
from controlroom.domain.run_events import DodResult, FileWriteIntended, StepFailed, StopHook


class IssueOpened(DomainEvent):
    type_name: ClassVar[str] = "IssueOpened"
    kind: str
    title: str
    detail: str
    run_id: str | None
    session_id: str | None
    recipe_id: str | None
    check: dict[str, Any] | None = None
    evidence: Any = None


class IssueClosed(DomainEvent):
    type_name: ClassVar[str] = "IssueClosed"
    resolution: str


def dod_issue_id(run_id: str, check_index: int) -> str:
    """Deterministic, so opening the issues of a run twice opens each only once."""
    return "iss_" + sha256_text(f"{run_id}:dod:{check_index}")[:24]


class Issue(Aggregate):
    def __init__(self, aggregate_id: str) -> None:
        super().__init__(aggregate_id)
        self.status = "open"
        self.title = ""
        self.run_id: str | None = None

    @classmethod
    def open(cls, issue_id: str, at: datetime, **fields: Any) -> Issue:
        issue = cls(issue_id)
        issue._trigger(IssueOpened, at, **fields)
        return issue

    def close(self, at: datetime, resolution: str) -> None:
        if self.status == "open":
            self._trigger(IssueClosed, at, resolution=resolution)

    def apply(self, event: DomainEvent) -> None:
        if isinstance(event, IssueOpened):
            self.title = event.title
            self.run_id = event.run_id
        elif isinstance(event, IssueClosed):
            self.status = "closed"


def open_dod_issues(
    run_id: str,
    recipe_id: str,
    session_id: str,
    at: datetime,
    results: list[DodResult],
    already_open: Callable[[str], bool],
) -> list[Issue]:
    """The decision of the DoD-issue policy: one issue per failed check, unless it is open
    already. `at` is the time of the DodChecked event, so whichever process reacts records
    exactly the same issue."""
    opened = []
    for result in results:
        issue_id = dod_issue_id(run_id, result.index)
        if result.passed or already_open(issue_id):
            continue
        opened.append(
            Issue.open(
                issue_id,
                at,
                kind="dod_failure",
                title=f"DoD failed in {recipe_id}: {result.detail}",
                detail=result.detail,
                run_id=run_id,
                session_id=session_id,
                recipe_id=recipe_id,
                check=result.check,
                evidence=result.evidence,
            )
        )
    return opened


def stop_hook_issue_id(run_id: str, instance_id: str) -> str:
    return "iss_" + sha256_text(f"{run_id}:stop_hook:{instance_id}")[:24]


def open_stop_hook_issue(
    event: StopHook, recipe_id: str, session_id: str, already_open: Callable[[str], bool]
) -> Issue | None:
    """The decision of the agent-output policy: one `agent_output_invalid` issue per
    STOP_HOOK, with every raw reply and its errors as evidence; never a DoD issue."""
    instance = event.instance_id or event.step_id
    issue_id = stop_hook_issue_id(event.originator_id, instance)
    if already_open(issue_id):
        return None
    detail = (
        f"agent '{event.agent_archetype}' gave no reply satisfying the '{event.contract}' "
        f"contract in {event.attempts} attempt(s): " + "; ".join(event.errors[:5])
    )
    return Issue.open(
        issue_id,
        event.timestamp,
        kind="agent_output_invalid",
        title=f"Agent output invalid in {recipe_id}, step '{instance}' (STOP_HOOK)",
        detail=detail,
        run_id=event.originator_id,
        session_id=session_id,
        recipe_id=recipe_id,
        check={"contract": event.contract, "step_id": event.step_id, "instance_id": instance},
        evidence={
            "attempts": event.attempts,
            "errors": event.errors,
            "replies": event.replies,
            "request_refs": event.request_refs,
            "prompt_type": event.prompt_type,
        },
    )


#: The StepFailed error type that opens a file-conflict issue.
FILE_CONFLICT = "FileWriteConflictError"


def file_conflict_issue_id(run_id: str, instance_id: str) -> str:
    return "iss_" + sha256_text(f"{run_id}:file_conflict:{instance_id}")[:24]


def open_file_conflict_issue(
    event: StepFailed,
    intent: FileWriteIntended | None,
    recipe_id: str,
    session_id: str,
    already_open: Callable[[str], bool],
) -> Issue | None:
    """The decision of the file-conflict policy: a `write_file` step that found its file
    not as it left or read it opens one `file_conflict` issue, with the hashes."""
    if event.error_type != FILE_CONFLICT:
        return None
    instance = event.instance_id or event.step_id
    issue_id = file_conflict_issue_id(event.originator_id, instance)
    if already_open(issue_id):
        return None
    path = intent.path if intent is not None else None
    return Issue.open(
        issue_id,
        event.timestamp,
        kind="file_conflict",
        title=f"File conflict in {recipe_id}, step '{instance}'"
        + (f": '{path}' not written" if path else ""),
        detail=event.error,
        run_id=event.originator_id,
        session_id=session_id,
        recipe_id=recipe_id,
        check={"step_id": event.step_id, "instance_id": instance},
        evidence={
            "path": path,
            "sha256_read": intent.sha256_before if intent else None,
            "sha256_intended": intent.sha256_intended if intent else None,
            "error": event.error,
        },
    )
