"""The Issue aggregate: something a run found that a person should look at."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.canonical import canonical_json, sha256_text
from controlroom.domain.errors import BadInputError
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
    #: Who closed it: "user" from the CLI and HTTP, a policy's name otherwise.
    by: str = "user"


class IssueAnswered(DomainEvent):
    """A person answered an issue that waits for one (`needs_human`): the answer continues
    the run that waits (a policy delivers it), and the issue is closed by it."""

    type_name: ClassVar[str] = "IssueAnswered"
    resolution: str
    by: str = "user"
    #: The model the person chose for the step's next run (`provider:model`), if any.
    model: str | None = None


class IssueReopened(DomainEvent):
    type_name: ClassVar[str] = "IssueReopened"
    reason: str
    by: str = "user"
    #: The run that found it again, when a run did.
    run_id: str | None = None


class IssueCommented(DomainEvent):
    type_name: ClassVar[str] = "IssueCommented"
    text: str
    author: str = "user"


class IssueRecurred(DomainEvent):
    """The same finding, found again by another run while the issue is open: linked to
    it, never a second issue."""

    type_name: ClassVar[str] = "IssueRecurred"
    run_id: str
    session_id: str | None = None


#: Longest comment or reason a person may record (the API's text limit applies too).
MAX_NOTE = 20_000


class IssueStateError(BadInputError):
    """A lifecycle step the issue's state does not allow (exit 64, HTTP 409)."""

    def __init__(self, issue_id: str, status: str, wanted: str) -> None:
        self.issue_id, self.status = issue_id, status
        super().__init__(f"issue {issue_id} is {status}: cannot {wanted}")


def legacy_dod_issue_id(run_id: str, check_index: int) -> str:
    """The id releases up to 0.2 gave a run's DoD issue: a policy reacting to their history
    finds those issues under it and never opens them again."""
    return "iss_" + sha256_text(f"{run_id}:dod:{check_index}")[:24]


def dod_issue_id(recipe_id: str, result: DodResult) -> str:
    """The finding's own id: the recipe, the check and what it found. Deterministic, so a
    run's issues are opened once however often the policy reacts, and a later run that
    finds exactly the same thing links to the open issue instead of opening another."""
    finding = canonical_json(
        {"check": result.check, "detail": result.detail, "evidence": result.evidence}
    )
    return "iss_" + sha256_text(f"dod:{recipe_id}:{finding}")[:24]


class Issue(Aggregate):
    def __init__(self, aggregate_id: str) -> None:
        super().__init__(aggregate_id)
        self.status = "open"
        self.title = ""
        self.run_id: str | None = None
        #: Every run that found it: the one that opened it, then each recurrence.
        self.runs: list[str] = []
        self.kind = ""
        self.check: dict[str, Any] | None = None

    @classmethod
    def open(cls, issue_id: str, at: datetime, **fields: Any) -> Issue:
        issue = cls(issue_id)
        issue._trigger(IssueOpened, at, **fields)
        return issue

    def close(self, at: datetime, resolution: str, by: str = "user") -> None:
        if self.status != "open":
            raise IssueStateError(self.id, self.status, "close it: it is closed already")
        self._trigger(IssueClosed, at, resolution=_note(resolution, "resolution"), by=by)

    def answer(
        self, at: datetime, resolution: str, by: str = "user", model: str | None = None
    ) -> None:
        """A person's resolution for an issue that waits for one; closes it."""
        if self.kind != "needs_human":
            raise IssueStateError(
                self.id, self.kind or "not a question", "answer it: only a needs_human issue waits"
            )
        if self.status != "open":
            raise IssueStateError(self.id, self.status, "answer it: it is closed already")
        if not resolution.strip():
            raise BadInputError("an answer needs a resolution: say what the step should do")
        self._trigger(
            IssueAnswered, at, resolution=_note(resolution, "resolution"), by=by, model=model
        )

    def reopen(
        self, at: datetime, reason: str, by: str = "user", run_id: str | None = None
    ) -> None:
        if self.status != "closed":
            raise IssueStateError(self.id, self.status, "reopen it: it is open")
        self._trigger(IssueReopened, at, reason=_note(reason, "reason"), by=by, run_id=run_id)

    def comment(self, at: datetime, text: str, author: str = "user") -> None:
        self._trigger(IssueCommented, at, text=_note(text, "text"), author=author)

    def found_again(self, at: datetime, run_id: str, session_id: str | None) -> None:
        """Another run found the same thing: linked when open, reopened when closed;
        nothing when this run is linked already (the policy reacting again)."""
        if run_id in self.runs:
            return
        if self.status == "closed":
            self.reopen(at, f"found again by run {run_id}", by="policy", run_id=run_id)
        else:
            self._trigger(IssueRecurred, at, run_id=run_id, session_id=session_id)

    def apply(self, event: DomainEvent) -> None:
        if isinstance(event, IssueOpened):
            self.title = event.title
            self.kind = event.kind
            self.check = event.check
            self.run_id = event.run_id
            self.runs = [event.run_id] if event.run_id else []
        elif isinstance(event, IssueClosed | IssueAnswered):
            self.status = "closed"
        elif isinstance(event, IssueReopened):
            self.status = "open"
            if event.run_id and event.run_id not in self.runs:
                self.runs.append(event.run_id)
        elif isinstance(event, IssueRecurred):
            self.runs.append(event.run_id)


def _note(text: str, field: str) -> str:
    cleaned = text.strip()
    if not cleaned:
        raise BadInputError(f"the {field} is empty")
    if len(cleaned) > MAX_NOTE or "\x00" in cleaned:
        raise BadInputError(f"the {field} must be under {MAX_NOTE} characters, without NUL")
    return cleaned


def open_dod_issues(
    run_id: str,
    recipe_id: str,
    session_id: str,
    at: datetime,
    results: list[DodResult],
    existing: Callable[[str], Issue | None],
) -> list[Issue]:
    """The decision of the DoD-issue policy: one issue per failed check's finding. A
    finding with an issue already is linked to it (reopened if it was closed), never
    opened twice. `at` is the time of the DodChecked event, so whichever process reacts
    records exactly the same events. Returns the issues with new events."""
    changed = []
    for result in results:
        if result.passed:
            continue
        issue_id = dod_issue_id(recipe_id, result)
        issue = existing(legacy_dod_issue_id(run_id, result.index)) or existing(issue_id)
        if issue is not None:
            issue.found_again(at, run_id, session_id)
            if issue.pending_count:
                changed.append(issue)
            continue
        changed.append(
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
    return changed


def stop_hook_issue_id(run_id: str, instance_id: str) -> str:
    return "iss_" + sha256_text(f"{run_id}:stop_hook:{instance_id}")[:24]


def open_stop_hook_issue(
    event: StopHook, recipe_id: str, session_id: str, already_open: Callable[[str], bool]
) -> Issue | None:
    """The decision of the agent-output policy: one `agent_output_invalid` issue per step
    of a run whose replies broke their contract (its first STOP_HOOK's raw replies and
    errors as evidence; a loop's `decide#2`, `decide#3` … of the same cause are that
    issue's, in the run's own events), never a DoD issue."""
    instance = event.instance_id or event.step_id
    issue_id = stop_hook_issue_id(event.originator_id, event.step_id)
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
            # A long reply is kept by its head and tail: its length and sha256 name it whole.
            "reply_digests": [d.model_dump() if d else None for d in event.reply_digests],
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
