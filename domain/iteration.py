"""Iterations (seed 002 §5b): a pipeline recipe run again on the same target is its next
iteration. The `Iteration` aggregate keeps one target's iterations: each archived when its
run ends, with what it deferred and relaxed and its gap analysis, which the next
iteration's first step receives (`iteration_context`).

A recipe is a pipeline when it declares `"iteration": {"key_args": [...]}`: the target is
the recipe id with those task args (`revision_pass` on scene 4 is another target than on
scene 5).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from controlroom.domain.aggregate import Aggregate
from controlroom.domain.canonical import canonical_json, sha256_text
from controlroom.domain.events import DomainEvent
from controlroom.domain.steps import STEP_KINDS, Phase, StepSpec


class IterationSpec(BaseModel):
    """A recipe's `iteration` block: what makes two runs iterations of one target."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key_args: list[str] = Field(
        default_factory=list, description="task args that name the target (none: the recipe)"
    )
    gap_slot: str | None = Field(
        default=None, description="the slot holding the iteration's gap analysis"
    )


def target_of(recipe_id: str, key_args: list[str], args: Mapping[str, Any]) -> str:
    """`revision_pass` or `revision_pass {"scene_number":4}`: one pipeline's target."""
    keyed = {k: args.get(k) for k in key_args}
    return recipe_id if not keyed else f"{recipe_id} {canonical_json(keyed)}"


def iteration_id(target: str) -> str:
    return "itr_" + sha256_text(f"iteration:{target}")[:24]


class IterationArchived(DomainEvent):
    """One iteration ended (its run done, partial, failed or cancelled): what it left."""

    type_name: ClassVar[str] = "IterationArchived"
    target: str
    recipe_id: str
    number: int
    run_id: str
    #: done, partial (a step deferred), failed, cancelled.
    result: str
    outcome: int | None = None
    #: Each: step_id, reason, note (for the next iteration).
    deferred: list[dict[str, Any]] = Field(default_factory=list)
    #: Each: step_id, constraint, relaxation, confidence.
    relaxed: list[dict[str, Any]] = Field(default_factory=list)
    gap_analysis: str | None = None
    #: Escalation rungs and gate rollbacks the run climbed, by kind.
    rungs: dict[str, int] = Field(default_factory=dict)


class Iteration(Aggregate):
    """The iterations of one target, in order."""

    def __init__(self, aggregate_id: str) -> None:
        super().__init__(aggregate_id)
        self.target = ""
        self.archived: list[IterationArchived] = []

    @classmethod
    def for_target(cls, target: str) -> Iteration:
        iteration = cls(iteration_id(target))
        iteration.target = target
        return iteration

    def number_of(self, run_id: str) -> int:
        """The iteration a run is (or will be, once archived)."""
        for archived in self.archived:
            if archived.run_id == run_id:
                return archived.number
        return len({a.run_id for a in self.archived}) + 1

    @property
    def last(self) -> IterationArchived | None:
        return self.archived[-1] if self.archived else None

    def previous_to(self, run_id: str) -> IterationArchived | None:
        """The latest iteration archived before `run_id`'s."""
        number = self.number_of(run_id)
        earlier = [a for a in self.archived if a.number < number]
        return earlier[-1] if earlier else None

    def archive(self, at: datetime, **fields: Any) -> bool:
        """Record an iteration's end; a run archived already with the same result records
        nothing (the policy reacting again). A retried run that ends again is archived
        again under its number."""
        run_id = fields["run_id"]
        for archived in self.archived:
            if archived.run_id == run_id and archived.result == fields["result"]:
                return False
        self._trigger(
            IterationArchived, at, target=self.target, number=self.number_of(run_id), **fields
        )
        return True

    def apply(self, event: DomainEvent) -> None:
        if isinstance(event, IterationArchived):
            self.target = event.target
            self.archived = [a for a in self.archived if a.run_id != event.run_id]
            self.archived.append(event)
            self.archived.sort(key=lambda a: a.number)


class IterationContextStep(StepSpec):
    """Model-free: what the iterations say, as an artifact slot an agent reads. `previous`:
    this run's iteration number and what the last iteration of its target deferred,
    relaxed and concluded (its gap analysis); `this_run`: what this run deferred, relaxed
    and climbed so far (for its gap analysis)."""

    phases: ClassVar[tuple[Phase, ...] | None] = ("b",)
    kind: Literal["iteration_context"] = "iteration_context"
    mode: Literal["previous", "this_run"] = "previous"

    def actor(self) -> str:
        return "iterations"


STEP_KINDS.register(IterationContextStep)
