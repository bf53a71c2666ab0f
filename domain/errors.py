"""One root error for everything Control Room refuses, one subclass per failure.

Each error carries its fields so the CLI and the HTTP API can render a precise message
(and, later, a JSON body naming the offending field) without parsing strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from controlroom.domain.run_events import TokenUsage


class ControlRoomError(Exception):
    """Root of every error Control Room raises on purpose."""


class BadInputError(ControlRoomError):
    """The user asked for something that cannot be done as asked (exit 64, HTTP 400)."""


class UnknownRecipeError(BadInputError):
    def __init__(self, recipe_id: str, known: Sequence[str]) -> None:
        self.recipe_id = recipe_id
        self.known = list(known)
        super().__init__(
            f"unknown recipe '{recipe_id}'; known recipes: {', '.join(sorted(known)) or '(none)'}"
        )


class MissingArgsError(BadInputError):
    def __init__(self, recipe_id: str, missing: Sequence[str]) -> None:
        self.recipe_id = recipe_id
        self.missing = sorted(missing)
        super().__init__(
            f"recipe '{recipe_id}' needs args: {', '.join(self.missing)} "
            f"(pass them as --arg NAME=VALUE)"
        )


class NotRoutableError(BadInputError):
    def __init__(self, description: str, reason: str) -> None:
        self.description = description
        self.reason = reason
        super().__init__(f"task is not routable: {reason}")


@dataclass(frozen=True)
class RecipeProblem:
    """One thing wrong with a recipe file, located by JSON path (`$.phase_b[2].prompt_type`)."""

    file: str
    json_path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.json_path}: {self.message}"


class RecipeInvalidError(BadInputError):
    def __init__(self, problems: Sequence[RecipeProblem]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"invalid recipe ({len(self.problems)} problem(s)):\n{lines}")


class RefResolutionError(ControlRoomError):
    """A `$ref` path could not be resolved; names the full path and where it broke."""

    def __init__(self, path: str, failed_at: str, reason: str) -> None:
        self.path = path
        self.failed_at = failed_at
        self.reason = reason
        super().__init__(f"cannot resolve $ref '{path}' at '{failed_at}': {reason}")


class WorkspaceError(BadInputError):
    """A path escapes the workspace, or the workspace cannot be read."""


class ToolError(ControlRoomError):
    """A phase A tool refused its arguments or failed on the workspace."""

    def __init__(self, tool: str, message: str) -> None:
        self.tool = tool
        super().__init__(f"tool '{tool}': {message}")


class UnknownToolError(ToolError):
    def __init__(self, tool: str) -> None:
        super().__init__(tool, "no such tool is registered")


class PromptError(ControlRoomError):
    """A prompt type or template cannot be found or rendered."""


class ModelError(ControlRoomError):
    """A model call failed (error, timeout, unusable output)."""


class ModelConfigError(BadInputError):
    """An agent's model cannot be resolved; never silently replaced by a default."""


class RunNotFoundError(BadInputError):
    def __init__(self, run_id: str, store: str | None = None) -> None:
        self.run_id = run_id
        self.store = store
        # Which store, named by the CLI (api/cli.py): a run recorded in PostgreSQL looked
        # for in the workspace's own file is otherwise a mystery. Never over HTTP: a
        # client is not told the server's paths or database.
        where = f" ({store})" if store else ""
        super().__init__(f"no run '{run_id}' in this store{where}")


class IssueNotFoundError(BadInputError):
    def __init__(self, issue_id: str) -> None:
        self.issue_id = issue_id
        super().__init__(f"no issue '{issue_id}' in this store")


class RunStateError(ControlRoomError):
    """A command does not fit the run's current state (e.g. cancel a finished run)."""

    def __init__(self, run_id: str, status: str, wanted: str) -> None:
        self.run_id = run_id
        self.status = status
        super().__init__(f"run '{run_id}' is {status}; cannot {wanted}")


class OtherWorkspaceError(RunStateError):
    """The run was started in another workspace sharing this store: continuing it here
    would read this workspace and write its files into it."""

    def __init__(self, run_id: str, started_in: str, here: str, wanted: str) -> None:
        ControlRoomError.__init__(
            self,
            f"run '{run_id}' belongs to the workspace {started_in}, not {here}: {wanted} it "
            f"there (`-w {started_in}`), or pass --here if that workspace moved here",
        )
        self.run_id, self.status, self.started_in = run_id, "elsewhere", started_in


class RunConflictError(ControlRoomError):
    """Another writer advanced the run first (optimistic concurrency on the aggregate)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"run '{run_id}' was advanced by another process")


class PayloadTooLargeError(ControlRoomError):
    def __init__(self, event_type: str, size: int, limit: int) -> None:
        self.event_type = event_type
        self.size = size
        self.limit = limit
        super().__init__(
            f"event {event_type} payload is {size} bytes, over the limit of {limit} bytes "
            f"(CONTROLROOM_MAX_EVENT_BYTES)"
        )


class StoreConfigError(BadInputError):
    """CONTROLROOM_STORE names a store that cannot be used."""


class ModelCallError(ModelError):
    """One failed attempt at a model call, classified so the engine can decide to retry.

    `kind` is one of: rate_limited, server_error, connection, timeout, stream_error (an
    error event mid-stream), incomplete (a stream cut before it finished) (retryable);
    rejected (a 4xx other than 429), unusable (empty, cut off at the token limit,
    malformed), too_large (longer than the reply limit: reading stopped there),
    client_error (the client library failed), deadline (the overall limit of one call
    passed) (not retryable).
    The message never contains a key: providers scrub it before raising.
    """

    RETRYABLE = frozenset(
        {"rate_limited", "server_error", "connection", "timeout", "stream_error", "incomplete"}
    )

    def __init__(self, kind: str, message: str, status: int | None = None) -> None:
        self.kind = kind
        self.status = status
        self.retryable = kind in self.RETRYABLE
        super().__init__(f"{kind}{f' (HTTP {status})' if status else ''}: {message}")

    def after_retries(self, message: str) -> ModelCallError:
        """This failure as the end of the call, told as `message` (who asked, after how
        many attempts): the same class, kind and status, so the step reporting it still
        reads as a model call's failure (a transport one, for its flow), and a cut reply
        as a `ReplyCutError`."""
        return _retold(type(self), self, message)


def _retold(cls: type[ModelCallError], error: ModelCallError, message: str) -> ModelCallError:
    told = cls.__new__(cls)
    told.__dict__.update(error.__dict__)
    told.args = (message,)
    return told


class ReplyCutError(ModelCallError):
    """The reply stopped at the token limit (OpenAI's `finish_reason: length`, Anthropic's
    `stop_reason: max_tokens`, the offline `cut` fault): a failure of the call, never a
    step's output, and not retried (the same request would be cut again). `max_tokens` is
    the limit the request set (None: the server's own); `usage`, what the cut reply cost."""

    def __init__(
        self, max_tokens: int | None, reason: str, usage: TokenUsage | None = None
    ) -> None:
        limit = f"max_tokens {max_tokens}" if max_tokens is not None else "the server's limit"
        super().__init__(
            "unusable", f"the reply was cut off at the token limit ({limit}, {reason})"
        )
        self.max_tokens = max_tokens
        self.usage = usage


#: What went wrong with the store, told apart where the driver raised it
#: (`eventstore/faults.py`), so that nobody reads an error's text to learn it.
StoreFaultKind = Literal["disk_full", "read_only", "locked", "unavailable", "io_error"]


class StoreUnavailableError(ControlRoomError):
    """The configured store cannot be read or written (database down, wrong credentials,
    disk full, locked too long). Nothing was recorded: the command can be tried again."""

    def __init__(self, message: str, kind: StoreFaultKind = "unavailable") -> None:
        self.kind = kind
        super().__init__(message)


class RunClaimedError(RunConflictError):
    """Another process holds a live claim on the run."""

    def __init__(self, run_id: str, owner: str, until: object) -> None:
        self.run_id, self.owner = run_id, owner
        ControlRoomError.__init__(
            self,
            f"run {run_id} is being advanced by {owner}"
            + (f" (lease until {until})" if until else "")
            + "; wait for it, or for its lease to expire",
        )


class ClaimLostError(RunConflictError):
    """Another process claimed the run between our look at it and our claim (workers racing
    for one queued run): nothing was done, the other process advances it."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        ControlRoomError.__init__(self, f"run {run_id} was claimed by another process first")


class RetryStepError(BadInputError):
    """`retry --from` named a step the run cannot continue from."""

    def __init__(self, run_id: str, message: str) -> None:
        self.run_id = run_id
        super().__init__(f"run {run_id}: {message}")


class AgentOutputInvalidError(ModelError):
    """An agent gave no reply that satisfies its output contract, after every retry
    (STOP_HOOK). An agent failure, not a transport fault: the pipeline halts."""

    def __init__(self, step_id: str, contract: str, attempts: int, errors: list[str]) -> None:
        self.step_id = step_id
        self.contract = contract
        self.attempts = attempts
        self.errors = errors
        shown = "; ".join(errors[:3]) + (f" (+{len(errors) - 3} more)" if len(errors) > 3 else "")
        super().__init__(
            f"STOP_HOOK: agent output invalid: no reply satisfied the '{contract}' contract "
            f"in {attempts} attempt(s): {shown}"
        )


class PathTemplateError(ControlRoomError):
    """A `write_file` path template is malformed, or a value it names cannot be used."""

    def __init__(self, template: str, reason: str) -> None:
        self.template = template
        self.reason = reason
        super().__init__(f"path template '{template}': {reason}")


class FileWriteConflictError(ControlRoomError):
    """A `write_file` step found the file not as the run left or read it: it is never
    overwritten. `expected` lists the hashes the step could accept, `found` what is there."""

    def __init__(self, path: str, found: str | None, expected: dict[str, str | None], why: str):
        self.path = path
        self.found = found
        self.expected = expected
        listed = ", or ".join(f"{_short(value)} ({name})" for name, value in expected.items())
        super().__init__(
            f"conflict on '{path}': {why}; found {_short(found)}, expected {listed}; "
            "the file was not overwritten"
        )


def _short(digest: str | None) -> str:
    return "no file" if digest is None else f"sha256:{digest}"


class StepCrashedError(ControlRoomError):
    """A step's work raised what no performer names (an operating-system fault, a bug, a
    recursion limit): the step fails with it, recorded, rather than leaving its run
    `running` with the exception lost in a log."""

    def __init__(self, step_id: str, error: BaseException) -> None:
        self.step_id = step_id
        self.error_type = type(error).__name__
        detail = str(error) or self.error_type
        super().__init__(f"step '{step_id}' stopped on an unexpected {self.error_type}: {detail}")


class StepDeferredError(ControlRoomError):
    """Triage set the step aside (DEFER): the run goes on without it and ends a partial
    success; the reason and the note are kept for the gap analysis."""

    def __init__(self, step_id: str, reason: str, note: str) -> None:
        self.step_id, self.reason, self.note = step_id, reason, note
        super().__init__(
            f"step '{step_id}' deferred: {reason}" + (f" (note: {note})" if note else "")
        )


class TriageBlockedError(ControlRoomError):
    """Triage blocked the step (or its RELAX / DEFER was overruled): a person decides."""

    def __init__(self, step_id: str, reason: str) -> None:
        self.step_id = step_id
        super().__init__(f"step '{step_id}' blocked by triage: {reason}")


class GateFailedError(ControlRoomError):
    """A review gate's verdict is FAIL (failure kind `gate`). The message is the feedback
    the step it rolls back to reads: the gate, where its verdict came from, and the
    findings (bounded: `left_out` says how many more there were)."""

    def __init__(
        self,
        gate_id: str,
        findings: Sequence[str],
        rollback_to: str,
        source: str = "",
        left_out: int = 0,
    ) -> None:
        self.gate_id = gate_id
        self.findings = list(findings)
        self.rollback_to = rollback_to
        self.source = source
        self.left_out = left_out
        listed = "; ".join(f"{i}) {finding}" for i, finding in enumerate(self.findings, 1))
        more = f"; and {left_out} more finding(s) left out" if left_out else ""
        where = f" ({source})" if source else ""
        super().__init__(f"review gate '{gate_id}' FAIL{where}: {listed or 'no findings'}{more}")


class ItemCheckFailedError(GateFailedError):
    """A loop's item still fails its check after its revisions: a gate's failure (the
    step's ladder decides what follows), naming the item and the findings."""

    def __init__(self, step_id: str, item: int, findings: list[str]) -> None:
        super().__init__(step_id, findings, step_id, f"item {item + 1}'s check")
        self.item = item


class DepthExceededError(ControlRoomError):
    """A child run would nest past the tree's depth budget (seed 004's 2 DEPTH_EXCEEDED):
    it is not started, and the code reaches the root unchanged."""

    outcome = 2

    def __init__(self, step_id: str, depth: int, max_depth: int) -> None:
        self.depth, self.max_depth = depth, max_depth
        super().__init__(
            f"step '{step_id}' would start a run at depth {depth}, past the depth budget "
            f"of {max_depth} (raise it with the root's task arg max_depth or the recipe's "
            f"max_depth)"
        )


class RunTimedOutError(ControlRoomError):
    """The run's deadline passed (seed 004's 21 TIMEOUT): it ends, and the code travels up."""

    outcome = 21

    def __init__(self, step_id: str, deadline: object) -> None:
        super().__init__(f"the run's deadline ({deadline}) passed at step '{step_id}'")


class TreeBudgetExceededError(ControlRoomError):
    """A run tree spent its budget (the root's `budget_usd` / `budget_tokens`): no further
    model call is made, and the run ends NEEDS_ESCALATION (11), which travels up."""

    outcome = 11

    def __init__(self, root_run_id: str, spent: str) -> None:
        super().__init__(
            f"the budget of run tree {root_run_id} is spent ({spent}); no further model call "
            f"is made. To go on with a larger budget, fork the root from the step that "
            f"stopped: `controlroom fork {root_run_id} --from STEP --arg budget_usd=N` "
            f"(or budget_tokens=N; the steps before STEP are copied, not paid for again); "
            f"`retry` keeps the budget it had"
        )


class NeedsRefinementError(ControlRoomError):
    """A verification loop ended with blocking findings left (seed 004's 10
    NEEDS_REFINEMENT): no improvement, or its cycles spent."""

    outcome = 10

    def __init__(self, step_id: str, reason: str, findings: list[str]) -> None:
        self.findings = findings
        listed = "; ".join(findings[:5])
        super().__init__(
            f"step '{step_id}' needs refinement: {reason}" + (f" ({listed})" if listed else "")
        )


class LoopScopeError(WorkspaceError):
    """A loop's step would write a workspace path outside the loop's scope (seed 003)."""

    def __init__(self, loop: str, step_id: str, why: str) -> None:
        self.loop = loop
        self.step_id = step_id
        super().__init__(f"loop '{loop}', step '{step_id}': {why}; nothing was written")
