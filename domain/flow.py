"""Flow policies: which step a run performs next, decided from the recipe and what ran.

The runner never walks an index itself; it asks the run, which asks its flow policy. Linear
flow is appendix B's: phase A then phase B, each step once, in order. Adaptive flows (a
typical flow, a showrunner's choice) plug in here and may pick a step again (`draft#2`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from controlroom.domain.recipe import Recipe


@dataclass(frozen=True)
class Performed:
    """One finished step instance, in the order they finished."""

    index: int
    step_id: str
    instance_id: str


class FlowPolicy(Protocol):
    name: str

    def next_index(self, recipe: Recipe, history: Sequence[Performed]) -> int | None:
        """The recipe step to perform next, or None when the steps are done."""
        ...


class LinearFlow:
    name = "linear"

    def next_index(self, recipe: Recipe, history: Sequence[Performed]) -> int | None:
        following = history[-1].index + 1 if history else 0
        return following if following < len(recipe.steps) else None


LINEAR = LinearFlow()


def flow_for(recipe: Recipe) -> FlowPolicy:
    return LINEAR


def instance_id(step_id: str, times_started_before: int) -> str:
    """`draft` the first time, `draft#2` the second, ..."""
    return step_id if times_started_before == 0 else f"{step_id}#{times_started_before + 1}"
