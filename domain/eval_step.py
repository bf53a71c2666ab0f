"""The `eval_forks` step kind: evaluate a change (a prompt template, a role's model) over
past runs, each forked at the first step the change touches (issue 31, "eval").

The step's task args name the change and the runs: `sources` (run ids), `prompt_texts`
(prompt type -> template text), `models` (role -> `provider:model`), `at_once`. Each fork
is a run of its own (origin `fork`, its parent the eval run); the step records
`EvalForkStarted` before a fork's first event and `EvalForkEnded` with the comparison once
it has ended, each committed at once, so a killed eval resumes without running a finished
fork again. The step's slot is the report (Markdown), which the recipe then writes.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from controlroom.domain.events import JournalRecord
from controlroom.domain.steps import STEP_KINDS, Phase, StepSpec

#: Forks run at once at most (the `at_once` arg is bounded by it).
MAX_AT_ONCE = 8
#: At most this many runs in one eval.
MAX_SOURCES = 200


class EvalForksStep(StepSpec):
    """Fork each source run at the first step the change touches, run the forks (at most
    `at_once` at a time), and report what changed."""

    default_phase: ClassVar[Phase | None] = None
    phases: ClassVar[tuple[Phase, ...] | None] = ("b",)
    kind: Literal["eval_forks"] = "eval_forks"

    def actor(self) -> str:
        return "eval"


STEP_KINDS.register(EvalForksStep)


class EvalForkStarted(JournalRecord):
    """A fork of the eval is about to be recorded under `fork_run_id` (chosen here, so a
    resumed eval continues that fork instead of starting another)."""

    type_name: ClassVar[str] = "EvalForkStarted"
    source_run_id: str
    fork_run_id: str
    from_step: str


class EvalForkSkipped(JournalRecord):
    """A source run the change does not touch (no step uses the prompt type or role), or
    one that cannot be forked: left out, with the reason."""

    type_name: ClassVar[str] = "EvalForkSkipped"
    source_run_id: str
    reason: str


class EvalForkEnded(JournalRecord):
    """A fork that ended, compared with its source."""

    type_name: ClassVar[str] = "EvalForkEnded"
    source_run_id: str
    fork_run_id: str
    from_step: str
    status_before: str
    status_after: str
    #: DoD checks by index: their verdict in the source and in the fork.
    dod_before: dict[str, bool] = Field(default_factory=dict)
    dod_after: dict[str, bool] = Field(default_factory=dict)
    #: Step verdicts that changed (a gate's, a critic's score): step -> [before, after].
    verdicts_changed: dict[str, list[Any]] = Field(default_factory=dict)
    changed_steps: list[str] = Field(default_factory=list)
    #: Lines of output diff per changed step (how much each step's output moved).
    output_diff_lines: dict[str, int] = Field(default_factory=dict)
    cost_before_usd: float = 0.0
    cost_after_usd: float = 0.0
    tokens_before: int = 0
    tokens_after: int = 0
    latency_before_ms: float = 0.0
    latency_after_ms: float = 0.0

    def flips(self) -> tuple[int, int]:
        """(pass→fail, fail→pass) among the DoD checks both runs made."""
        down = up = 0
        for index, before in self.dod_before.items():
            after = self.dod_after.get(index)
            if after is None or after == before:
                continue
            if before and not after:
                down += 1
            else:
                up += 1
        return down, up
