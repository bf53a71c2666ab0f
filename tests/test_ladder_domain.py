"""The ladder's decisions as a pure function of the run's view (`domain/ladder.py`)."""

from __future__ import annotations

from typing import Any

from controlroom.domain.flow import (
    LINEAR,
    FailRun,
    HumanAnswer,
    PastDecision,
    Performed,
    RunStep,
    RunView,
    StepFailure,
    StepsDone,
)
from controlroom.domain.ladder import Laddered, ladder_decide
from controlroom.domain.ladder_spec import Ladder, Triage
from controlroom.domain.recipe import Recipe

RECIPE = Recipe.model_validate(
    {
        "recipe_id": "r",
        "phase_b": [
            {
                "step_id": "draft",
                "agent_archetype": "writer",
                "prompt_type": "draft_scene",
                "output_slot": "draft",
            },
            {
                "step_id": "check",
                "agent_archetype": "continuity",
                "prompt_type": "check_continuity",
                "input_slots": ["draft"],
                "output_slot": "report",
            },
            {
                "kind": "review_gate",
                "step_id": "gate",
                "verdict_slot": "report",
                "rollback_to": "draft",
                "max_rollbacks": 1,
                "output_slot": "verdict",
            },
            {
                "kind": "review_gate",
                "step_id": "soft",
                "verdict_slot": "report",
                "rollback_to": "draft",
                "max_rollbacks": 0,
                "severity": "advisory",
                "output_slot": "soft_verdict",
            },
            {
                "step_id": "after",
                "agent_archetype": "editor",
                "prompt_type": "polish_draft",
                "input_slots": ["report"],
                "output_slot": "after",
            },
        ],
    }
)
LADDER = Ladder(
    chain=["lab:b", "lab:c"],
    consult=["lab:p"],
    synthesizer="lab:s",
    triage=Triage(model="lab:t"),
    owner="ed",
    base="lab:a",
)


def view(
    failure: StepFailure | None,
    rungs: list[dict[str, Any]] = (),  # type: ignore[assignment]
    ladders: dict[str, Ladder] | None = None,
    answer: HumanAnswer | None = None,
    triage: tuple[str, ...] = (),
) -> RunView:
    decisions = [PastDecision(None, str(r["subject"]), None, "", r) for r in rungs]
    return RunView(
        recipe=RECIPE,
        history=(Performed(0, "draft", "draft"),),
        slots={},
        decisions=decisions,
        times_started={},
        failure=failure,
        ladders=ladders if ladders is not None else {"draft": LADDER},
        answer=answer,
        triage=triage,
    )


def failed(step: str, index: int, kind: str = "transport") -> StepFailure:
    return StepFailure(index, step, step, kind, "ModelCallError", "server_error: boom")  # type: ignore[arg-type]


def test_the_rungs_come_in_order_escalate_consult_triage_person() -> None:
    f = failed("draft", 0)
    seen: list[dict[str, Any]] = []
    kinds = []
    for _ in range(5):
        decision = ladder_decide(view(f, seen))
        assert isinstance(decision, RunStep) and decision.rung is not None
        kinds.append(decision.rung["kind"])
        seen.append(dict(decision.rung))
        if decision.rung["kind"] == "human":
            break
    assert kinds == ["escalate", "escalate", "consult", "triage", "human"]
    assert [r.get("to_model") for r in seen[:2]] == ["lab:b", "lab:c"]
    assert seen[0]["from_model"] == "lab:a" and seen[1]["from_model"] == "lab:b"


def test_the_escalation_prompt_carries_the_failure_and_consult_names_its_models() -> None:
    first = ladder_decide(view(failed("draft", 0)))
    assert isinstance(first, RunStep) and first.overrides.model == "lab:b"
    assert "server_error: boom" in first.overrides.prompt_additions[0]
    spent = [{"kind": "escalate", "subject": "draft", "to_model": m} for m in ("lab:b", "lab:c")]
    consult = ladder_decide(view(failed("draft", 0), spent))
    assert isinstance(consult, RunStep)
    assert consult.overrides.ladder["consult"] == ["lab:p"]
    assert consult.overrides.ladder["synthesizer"] == "lab:s"
    assert consult.overrides.model == "lab:c"  # the chain's strongest


def test_a_block_goes_straight_to_a_person_and_the_answer_runs_the_step_again() -> None:
    blocked = ladder_decide(view(failed("draft", 0, "blocked"), []))
    assert isinstance(blocked, RunStep) and blocked.rung and blocked.rung["kind"] == "human"
    assert blocked.overrides.ladder["owner"] == "ed"
    answer = HumanAnswer("draft", "draft#5", "keep it short", "ed", model="lab:z")
    again = ladder_decide(view(None, answer=answer))
    assert isinstance(again, RunStep) and again.index == 0
    assert again.overrides.model == "lab:z"
    assert "keep it short" in again.overrides.prompt_additions[0]


def test_triage_limits_left_are_computed_from_the_runs_verdicts() -> None:
    spent = [{"kind": "escalate", "subject": "draft"}, {"kind": "consult", "subject": "draft"}]
    decision = ladder_decide(view(failed("draft", 0), spent, triage=("RELAX",)))
    assert isinstance(decision, RunStep)
    assert decision.overrides.ladder["relax_left"] == 0
    assert decision.overrides.ladder["defer_left"] == 1


def test_a_gate_rolls_back_with_its_findings_then_hands_over_to_the_ladder() -> None:
    gate_failure = StepFailure(2, "gate", "gate", "gate", "GateFailedError", "1) eyes: grey")
    first = ladder_decide(view(gate_failure))
    assert isinstance(first, RunStep) and first.index == 0 and first.rung
    assert first.rung["kind"] == "rollback"
    assert "<review_feedback" in first.overrides.prompt_additions[0]
    rolled = [dict(first.rung)]
    then = ladder_decide(view(gate_failure, rolled))
    assert isinstance(then, RunStep) and then.rung and then.rung["kind"] == "escalate"
    assert then.rung["subject"] == "draft"
    no_ladder = ladder_decide(view(gate_failure, rolled, ladders={}))
    assert isinstance(no_ladder, FailRun) and no_ladder.outcome == 10


def test_an_advisory_gate_lets_the_run_go_on_after_its_rollbacks() -> None:
    soft = StepFailure(3, "soft", "soft", "gate", "GateFailedError", "revise: pacing")
    decision = ladder_decide(view(soft))
    assert isinstance(decision, RunStep) and decision.index == 4
    assert decision.rung and decision.rung["kind"] == "accept"


def test_a_performer_failure_is_not_the_ladders_and_no_ladder_means_linear() -> None:
    assert ladder_decide(view(failed("draft", 0, "performer"))) is None
    assert ladder_decide(view(failed("draft", 0), ladders={})) is None
    assert isinstance(Laddered(LINEAR).decide(view(failed("draft", 0), ladders={})), FailRun)


def test_a_deferred_step_passes_over_the_steps_that_read_its_slot() -> None:
    deferred = StepFailure(0, "draft", "draft#4", "deferred", "StepDeferredError", "set aside")
    decision = ladder_decide(view(deferred))
    assert isinstance(decision, StepsDone) and decision.rung
    assert decision.rung["skipped"] == ["draft", "check", "gate", "soft", "after"]
