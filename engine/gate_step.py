"""The `review_gate` step's performer (`domain/gates.py`): no model, no side effect.

It reads the run's slots as they are, runs the gate's model-free checks (the DoD's
evaluator; whether a file exists is asked of the workspace), and judges. PASS: the
outcome writes the gate's slot. FAIL: `GateFailedError`, whose message is the feedback for
the step the run's flow sends it back to (the runner records it as the step's failure,
of kind `gate`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controlroom.domain.dod import evaluate_dod, failing_items
from controlroom.domain.errors import GateFailedError, RefResolutionError, WorkspaceError
from controlroom.domain.gates import GateOutcome, ReviewGateStep, judge
from controlroom.domain.recipe import SlotFieldEmpty, SlotMentionsEach
from controlroom.domain.run import StepInstance

if TYPE_CHECKING:  # performers imports this module to register it
    from controlroom.engine.performers import Execution


async def perform_review_gate(execution: Execution, instance: StepInstance) -> GateOutcome:
    step = instance.step
    assert isinstance(step, ReviewGateStep)
    run = execution.run
    workspace = execution.ctx.workspace

    def file_exists(path: str) -> bool:
        try:
            return workspace.exists(path)
        except WorkspaceError:
            return False

    task = run.task_context()
    results = evaluate_dod(step.checks, run.slot_values, task, file_exists)
    failing: list[list[Any]] = []
    for check, result in zip(step.checks, results, strict=True):
        items: list[Any] = []
        if not result.passed and isinstance(check, SlotFieldEmpty | SlotMentionsEach):
            try:
                items = failing_items(check, run.slot_values, task)
            except RefResolutionError:
                items = []  # the result's detail says what could not be read
        failing.append(items)
    judgement = judge(step, run.slot_values, run.slot_texts, results, failing)
    if judgement.passed:
        return GateOutcome.of(judgement, step.slots_read())
    findings, left_out = judgement.shown()
    raise GateFailedError(step.step_id, findings, step.rollback_to, judgement.source, left_out)
