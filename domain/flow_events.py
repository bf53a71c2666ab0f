"""The event a flow's decision is recorded as (`domain/flow.py`)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from controlroom.domain.events import DomainEvent


class FlowDecided(DomainEvent):
    """A run's flow answered something other than the next step in order: a step again, a
    step out of order, a step with overrides, the end of the steps early, or a failure with
    an outcome other than 1. Replay and resume read it; they never ask the flow again."""

    type_name: ClassVar[str] = "FlowDecided"
    flow: str
    #: The step instance after which the decision was made (None: at the start).
    after_instance: str | None
    #: That instance's failure kind when it failed (transport, contract, performer, gate).
    failure_kind: str | None = None
    candidates: list[str]
    #: A step id, "done" or "fail".
    choice: str
    #: The step instance the decision starts, when it starts one.
    instance_id: str | None = None
    reason: str
    overrides: dict[str, Any] = Field(default_factory=dict)
    outcome: int | None = None
    #: The escalation-ladder rung this decision climbed (kind, subject step, from and to
    #: model, the failure it answers), when it is one (`domain/ladder.py`).
    rung: dict[str, Any] | None = None
    #: A hash of the view the decision was made from (what ran, slots, the failure).
    context_sha256: str
    #: An adaptive loop's turn (`domain/adaptive_flow.py`): the turn number, the criteria
    #: that hold, the Showrunner's choice and role, the sha256 of each context tier, a
    #: fallback or a stall.
    loop: dict[str, Any] | None = None
