"""The `review_gate` step kind: reading the verdicts real models write (failing closed on
anything else), the load-time checks naming the JSON path, a gate passing and failing in a
real run, and the rollback targets of every agent kind reading their overrides."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.errors import GateFailedError, RecipeInvalidError
from controlroom.domain.flow import FLOWS, LINEAR, FailRun, Overrides, RunStep, RunView, StepsDone
from controlroom.domain.gates import (
    FINDING_CHARS,
    MAX_FINDINGS,
    ReviewGateStep,
    judge,
    read_verdict,
)
from controlroom.domain.recipe import SlotFieldEmpty, SlotMentionsEach
from controlroom.domain.recipe_check import validate_recipe
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import (
    AgentResponded,
    DodResult,
    ModelRequestRecorded,
    SlotWritten,
    StepCompleted,
    StepFailed,
)
from controlroom.engine.context import Context
from controlroom.engine.runner import failure_kind
from controlroom.engine.service import RunRequest, RunService
from controlroom.prompts.registry import PromptRegistry
from controlroom.recipes.catalog import BUNDLED_DIR
from controlroom.tools.base import ToolRegistry
from tests.conftest import write_override

TOOLS = ToolRegistry.default().names()
PROMPTS = PromptRegistry.for_workspace(None).prompt_types()

CONFLICT = {
    "entity": "Kael",
    "attribute": "eyes",
    "canon_value": "grey",
    "found": "green",
    "sentence": "His green eyes caught the lamp.",
}


# -- reading a verdict ---------------------------------------------------------------------


def test_a_continuity_report_passes_or_fails_with_each_conflict_spelt_out() -> None:
    assert read_verdict({"pass": True, "conflicts": [], "facts_checked": 9}).passed
    failed = read_verdict({"pass": False, "conflicts": [CONFLICT], "facts_checked": 9})
    assert not failed.passed
    assert failed.findings == (
        "Kael: eyes canon 'grey', the text says 'green' in “His green eyes caught the lamp.”",
    )


@pytest.mark.parametrize(
    ("value", "passed"),
    [
        ({"pass": "true"}, True),
        ({"pass": "False", "problems": ["x"]}, False),
        ({"passed": True}, True),
        ({"verdict": "accept", "problems": ["a minor slip"]}, True),  # a critic's 7: accept
        ({"verdict": "APPROVE"}, True),
        ({"verdict": "ok"}, True),
        ({"verdict": "Revise", "problems": ["flat ending"]}, False),
        ({"verdict": "reject", "issues": ["off topic"]}, False),
        ({"verdict": "FAIL", "findings": ["x"]}, False),
        ({"status": "passed"}, True),
        ({"status": "failed", "errors": ["boom"]}, False),
        ({"Pass": True}, True),  # a key in another case
        ({"pass": True, "status": "completed"}, True),  # a status that is no verdict
        ({"pass": False, "result": "see the conflicts"}, False),
    ],
)
def test_json_verdicts_in_the_shapes_models_write(value: dict[str, Any], passed: bool) -> None:
    verdict = read_verdict(value)
    assert verdict.passed is passed
    assert bool(verdict.findings) is not passed


def test_a_failing_verdict_gives_its_findings_from_every_list_and_its_suggestion() -> None:
    verdict = read_verdict(
        {
            "verdict": "revise",
            "score": 5,
            "problems": ["the turn happens off the page"],
            "findings": [{"type": "canon_conflict", "location": "a.md:3", "message": "eyes"}],
            "issues": "one issue as a string",
            "errors": [{"problem": "no ending"}],
            "suggestion": "play the letter as a moment",
        }
    )
    assert verdict.findings == (
        "a.md:3: eyes",
        "one issue as a string",
        "no ending",
        "the turn happens off the page",
        "suggestion: play the letter as a moment",
    )


@pytest.mark.parametrize(
    ("text", "passed", "findings"),
    [
        ("PASS", True, ()),
        ("**PASS**", True, ()),
        ("Pass. The scene agrees with the canon.", True, ()),
        ("# Verdict: approved", True, ()),
        ("FAIL: the eye colour is green, canon says grey", False, ("the eye colour is green, "
                                                                    "canon says grey",)),
        ("**Verdict:** FAIL\n- Kael's eyes are green\n- Mira is left-handed", False,
         ("Kael's eyes are green", "Mira is left-handed")),
        ("Continuity: FAIL (1 conflict, 9 facts checked)\n- Kael eyes: canon 'grey', found "
         "'green'", False, ("Kael eyes: canon 'grey', found 'green'",)),
        ("Continuity: pass (17 canon fact(s) checked)\n", True, ()),
        ("Verdict: revise (5/10)\n+ brisk\n- flat ending\nSuggestion: end on the bell\n", False,
         ("flat ending", "suggestion: end on the bell")),
        ("FAIL", False, ("FAIL, with no findings given",)),
    ],
)  # fmt: skip
def test_prose_verdicts_by_their_first_line(
    text: str, passed: bool, findings: tuple[str, ...]
) -> None:
    verdict = read_verdict(text, text)
    assert (verdict.passed, verdict.findings) == (passed, findings)


def test_fenced_json_and_json_after_prose_are_read() -> None:
    fenced = 'Here is my report:\n```json\n{"pass": false, "conflicts": []}\n```\n'
    assert read_verdict(fenced).passed is False
    after = 'My verdict follows. {"verdict": "accept", "score": 8}'
    assert read_verdict(after).passed is True
    # The slot's value is what `$ref`s see; a pointer slot's text is only its summary.
    assert read_verdict({"pass": True}, "Checked 4 scenes: 0 finding(s)").passed


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (None, "the slot is empty"),
        ("", "the slot is empty"),
        ("   \n", "the slot is empty"),
        ("I think the scene works well.", "neither PASS nor FAIL"),
        ("Passing through the gate, Kael stopped.", "neither PASS nor FAIL"),
        ("No conflicts found.", "neither PASS nor FAIL"),
        ({"score": 9, "notes": "fine"}, "no pass, verdict or status field (fields: notes, score)"),
        ({"pass": "maybe"}, "'pass' is \"maybe\", which is neither a pass nor a fail"),
        ({"pass": 1}, "'pass' is 1"),
        ({"verdict": "great"}, "'verdict' is \"great\""),
        ('{"pass": true,', "not valid JSON"),
        ([{"pass": True}], "a JSON list"),
        (42, "a int"),
        ('```json\n{"summary": "fine"}\n```', "neither PASS nor FAIL"),
    ],
)
def test_anything_unreadable_fails_closed_saying_why(value: Any, why: str) -> None:
    verdict = read_verdict(value, value if isinstance(value, str) else None)
    assert not verdict.passed
    (finding,) = verdict.findings
    assert finding.startswith("the verdict could not be read: ") and why in finding, finding


def test_a_verdict_contradicting_its_own_findings_is_a_fail() -> None:
    verdict = read_verdict({"pass": True, "conflicts": [CONFLICT]})
    assert not verdict.passed
    assert verdict.findings[0] == "the verdict says PASS but lists 1 finding(s) under 'conflicts'"
    assert "the text says 'green'" in verdict.findings[1]
    both = read_verdict({"pass": True, "verdict": "revise", "problems": ["flat"]})
    assert not both.passed and both.findings[0].startswith("the verdict contradicts itself")
    mixed = read_verdict('PASS\n```json\n{"pass": false, "conflicts": []}\n```')
    assert not mixed.passed and "first line says PASS, its JSON says FAIL" in mixed.findings[0]
    # "None" where a list belongs is no finding: the verdict stands.
    assert read_verdict({"pass": True, "issues": "none"}).passed


# -- a gate's judgement --------------------------------------------------------------------


def _gate(**fields: Any) -> ReviewGateStep:
    return ReviewGateStep.model_validate(
        {"step_id": "gate", "output_slot": "gate_verdict", "rollback_to": "review", **fields}
    )


def test_a_failed_model_free_check_wins_over_the_models_pass() -> None:
    gate = _gate(
        verdict_slot="continuity_report",
        checks=[{"check": "slot_field_empty", "slot": "consistency_report", "field": "findings"}],
    )
    finding = {"type": "canon_conflict", "message": "a.md:3: Kael's eyes are 'green'", **CONFLICT}
    slots = {
        "consistency_report": {"pass": False, "findings": [finding]},
        "continuity_report": {"pass": True, "findings": [], "summary": "all fine"},
    }
    failed = DodResult(index=0, check={}, passed=False, detail="holds 1 item(s)")
    judgement = judge(gate, slots, {}, [failed], [[finding]])
    assert not judgement.passed
    assert judgement.verdict is not None and judgement.verdict.passed  # the model said PASS
    assert judgement.findings == (
        "consistency_report.findings: Kael: eyes canon 'grey', the text says 'green' in "
        "“His green eyes caught the lamp.”",
    )
    assert "a failed check overrides the verdict's PASS" in judgement.source
    passed = DodResult(index=0, check={}, passed=True, detail="empty")
    assert judge(gate, slots, {}, [passed]).passed


def test_a_gate_without_its_verdict_slot_written_fails_closed() -> None:
    judgement = judge(_gate(verdict_slot="critique"), {}, {}, [])
    assert not judgement.passed
    assert judgement.findings == (
        "the verdict could not be read: slot 'critique' has not been written",
    )


def test_the_feedback_is_bounded_and_says_how_much_it_left_out() -> None:
    problems = [f"problem {i}: " + "x" * 1000 for i in range(30)]
    slots = {"critique": {"verdict": "revise", "problems": problems}}
    judgement = judge(_gate(verdict_slot="critique"), slots, {}, [])
    findings, left_out = judgement.shown()
    assert len(findings) == MAX_FINDINGS and left_out == 30 - MAX_FINDINGS
    assert all(len(f) <= FINDING_CHARS and f.endswith("…") for f in findings)
    error = GateFailedError("critic_gate", findings, "polish", judgement.source, left_out)
    message = str(error)
    assert message.startswith(
        "review gate 'critic_gate' FAIL (verdict in slot 'critique'): 1) problem 0: xxx"
    )
    assert "; 10) problem 9: " in message and "11)" not in message
    assert message.endswith("; and 20 more finding(s) left out")
    assert len(message) < (FINDING_CHARS + 10) * MAX_FINDINGS + 200
    assert (error.gate_id, error.rollback_to, error.findings) == ("critic_gate", "polish", findings)
    assert failure_kind(error) == "gate"


def test_list_checks_over_slots() -> None:
    from controlroom.domain.dod import evaluate_dod

    findings = [{"path": "a.md", "line": 3, "message": "a.md:3: eyes"}, {"path": "b.md", "line": 9}]
    slots = {
        "report": {"findings": findings, "empty": [], "other": {}},
        "fixes": "1. `a.md:3` — grey\n2. b.md line 9: Anselm",
        "half": "1. `a.md:3` — grey",
    }
    checks = [
        {"check": "slot_field_empty", "slot": "report", "field": "empty"},
        {"check": "slot_field_empty", "slot": "report", "field": "findings"},
        {"check": "slot_field_empty", "slot": "report", "field": "missing"},
        {"check": "slot_mentions_each", "slot": "fixes", "items": {"$ref": "report.findings"},
         "mention": ["{path}:{line}", "{path} line {line}"]},
        {"check": "slot_mentions_each", "slot": "half", "items": {"$ref": "report.findings"},
         "mention": ["{path}:{line}"]},
        {"check": "slot_mentions_each", "slot": "fixes", "items": {"$ref": "report.other"},
         "mention": ["{path}"]},
    ]  # fmt: skip
    gate = _gate(checks=checks)
    results = evaluate_dod(gate.checks, slots, {}, lambda _: True)
    assert [r.passed for r in results] == [True, False, False, True, False, False]
    assert results[1].detail == "report.findings holds 2 item(s)"
    assert results[1].evidence == {"findings": findings, "count": 2}
    assert "report.missing" in results[2].detail  # a field that is not there never passes
    assert results[4].detail == "slot 'half' does not mention 1 item(s) of report.findings"
    assert results[4].evidence == {"not_mentioned": [findings[1]], "count": 1}
    assert "is not a list" in results[5].detail


# -- load-time checks ----------------------------------------------------------------------


def creative() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((BUNDLED_DIR / "creative_draft_scene.json").read_text())
    return data


def _problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(RecipeInvalidError) as caught:
        validate_recipe(data, "gated.json", TOOLS, PROMPTS)
    return [(p.json_path, p.message) for p in caught.value.problems]


def _gate_index(data: dict[str, Any], step_id: str) -> int:
    return next(i for i, s in enumerate(data["phase_b"]) if s["step_id"] == step_id)


@pytest.mark.parametrize(
    ("rollback_to", "message"),
    [
        ("nowhere", "no step 'nowhere' in the recipe (steps: discover, analyze_outline"),
        ("critique", "step 'critique' comes after the gate: name an earlier step"),
        ("continuity_gate", "a gate cannot roll back to itself"),
        ("check_canon", "step 'check_canon' is a phase A tool step"),
    ],
)
def test_a_rollback_target_must_be_an_earlier_agent_step(rollback_to: str, message: str) -> None:
    data = creative()
    i = _gate_index(data, "continuity_gate")
    data["phase_b"][i]["rollback_to"] = rollback_to
    ((path, said),) = _problems(data)
    assert path == f"$.phase_b[{i}].rollback_to" and said.startswith(message), said


def test_a_gate_never_stands_after_a_write_nor_rolls_back_to_one() -> None:
    data = creative()
    write = data["phase_b"].pop()
    data["phase_b"].insert(_gate_index(data, "critic_gate"), write)  # the write before the gate
    i = _gate_index(data, "critic_gate")
    assert _problems(data) == [
        (f"$.phase_b[{i}].rollback_to", "step 'write_scene' writes to the workspace between "
         "'polish' and the gate: a gate stands before anything is written"),
    ]  # fmt: skip
    data["phase_b"][i]["rollback_to"] = "write_scene"
    ((path, said),) = _problems(data)
    assert path == f"$.phase_b[{i}].rollback_to"
    assert said.startswith("step 'write_scene' is a 'write_file' step")


def test_a_gate_needs_a_verdict_or_checks_and_reads_only_written_slots() -> None:
    data = creative()
    i = _gate_index(data, "continuity_gate")
    del data["phase_b"][i]["verdict_slot"]
    assert _problems(data) == [
        (f"$.phase_b[{i}].verdict_slot", "a review gate needs a verdict_slot, checks, or both")
    ]
    data["phase_b"][i]["verdict_slot"] = "critique"  # written after the gate
    data["phase_b"][i]["checks"] = [
        {"check": "slot_not_null", "slot": "draft"},
        {"check": "slot_field_equals", "slot": "nothing", "field": "pass", "expected": True},
        {"check": "file_exists", "path": {"$ref": "scene_file.path"}},
    ]
    assert _problems(data) == [
        (f"$.phase_b[{i}].checks[2].path.$ref", "bad $ref root 'scene_file.path': reads slot "
         "'scene_file' before any step writes it"),
        (f"$.phase_b[{i}].verdict_slot", "reads slot 'critique' before any step writes it"),
        (f"$.phase_b[{i}].checks[1].slot", "reads slot 'nothing' before any step writes it"),
    ]  # fmt: skip


def test_a_gate_belongs_in_phase_b_and_its_bounds_are_checked() -> None:
    data = creative()
    gate = data["phase_b"].pop(_gate_index(data, "continuity_gate"))
    data["phase_a"].append({**gate, "rollback_to": "discover", "verdict_slot": "discovery"})
    problems = _problems(data)
    assert ("$.phase_a[3].kind", "a 'review_gate' step belongs in phase_b") in problems
    data = creative()
    i = _gate_index(data, "continuity_gate")
    for bad in (11, -1, "two", 2.5):
        data["phase_b"][i]["max_rollbacks"] = bad
        ((path, _),) = _problems(data)
        assert path == f"$.phase_b[{i}].max_rollbacks"
    data["phase_b"][i]["max_rollbacks"] = 2
    data["phase_b"][i]["severity"] = "fatal"
    ((path, _),) = _problems(data)
    assert path == f"$.phase_b[{i}].severity"
    data["phase_b"][i]["severity"] = "advisory"
    data["phase_b"][i]["checks"] = [
        {"check": "slot_mentions_each", "slot": "draft", "items": {"$ref": "x.y"}, "mention": ["p"]}
    ]
    ((path, _),) = _problems(data)
    assert path == f"$.phase_b[{i}].checks[0].mention[0]"  # names no field of the item
    data["phase_b"][i]["checks"][0]["mention"] = ["{path}"]
    ((path, said),) = _problems(data)
    assert path == f"$.phase_b[{i}].checks[0].items.$ref" and "reads slot 'x'" in said


def test_the_dod_checks_list_checks_slots_and_refs() -> None:
    data = creative()
    data["dod"] = [
        {"check": "slot_field_empty", "slot": "nope", "field": "findings"},
        {"check": "slot_mentions_each", "slot": "draft", "items": {"$ref": "nope.findings"},
         "mention": ["{path}"]},
    ]  # fmt: skip
    assert _problems(data) == [
        ("$.dod[0].slot", "checks slot 'nope' that no step writes"),
        ("$.dod[1].items.$ref", "bad $ref root 'nope.findings': reads slot 'nope' before any "
         "step writes it"),
    ]  # fmt: skip


def test_old_snapshots_without_gates_still_load(workspace: Path) -> None:
    """A run recorded before gates existed replays its recipe snapshot unchanged."""
    from tests.conftest import FIXTURES

    appendix = json.loads((FIXTURES / "appendix_b_recipe.json").read_text())
    recipe = validate_recipe(appendix, "a.json", TOOLS, PROMPTS)
    assert not any(isinstance(s, ReviewGateStep) for s in recipe.steps)


# -- in a real run ---------------------------------------------------------------------------


def events(ctx: Context, run_id: str, kind: type[Any]) -> list[Any]:
    return [e for e in ctx.store.stream(run_id) if isinstance(e, kind)]


def test_the_main_job_passes_its_gates_offline_and_records_their_verdicts(
    ctx: Context, service: RunService
) -> None:
    run = asyncio.run(service.execute(service.start(RunRequest("creative_draft_scene", {}))))
    assert run.status == RunStatus.DONE, run.error
    assert not events(ctx, run.id, StepFailed)
    completed = [e.instance_id for e in events(ctx, run.id, StepCompleted)]
    assert completed[-4:] == ["continuity_gate", "critique", "critic_gate", "write_scene"]
    for slot, source in (
        ("continuity_verdict", "verdict in slot 'continuity_report'"),
        ("critic_verdict", "verdict in slot 'critique'"),
    ):
        assert run.slot_values[slot] == {"verdict": "PASS", "findings": [], "source": source}
    gate_slots = [e for e in events(ctx, run.id, SlotWritten) if e.slot == "continuity_verdict"]
    assert [e.agent_id for e in gate_slots] == ["gate"]


@pytest.fixture
def fail_kinds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The failure kind the runner gives each failed step."""
    kinds: list[str] = []
    original = Run.fail_step

    def spy(
        self: Run, at: Any, error_type: str, error: str, kind: Any = "performer", **more: Any
    ) -> None:
        kinds.append(kind)
        original(self, at, error_type, error, kind, **more)

    monkeypatch.setattr(Run, "fail_step", spy)
    return kinds


def test_a_gate_fail_ends_its_step_with_kind_gate_and_the_findings(
    workspace: Path, fail_kinds: list[str]
) -> None:
    """The consistency tool's own report as the verdict: it finds the planted contradiction,
    so the gate fails, its error the feedback the review would read."""
    data: dict[str, Any] = json.loads((BUNDLED_DIR / "analytical_consistency.json").read_text())
    data["recipe_id"] = "gated_consistency"
    data["phase_b"] = [
        data["phase_b"][0],  # review
        {
            "kind": "review_gate",
            "step_id": "tool_gate",
            "verdict_slot": "consistency_report",
            "rollback_to": "review",
            "max_rollbacks": 0,
            "output_slot": "tool_verdict",
        },
        {"kind": "write_file", "step_id": "write", "source_slot": "continuity_report",
         "path": "control-room-reports/review.json", "output_slot": "written"},
    ]  # fmt: skip
    data["dod"] = [{"check": "slot_not_null", "slot": "tool_verdict"}]
    write_override(workspace, "gated_consistency.json", json.dumps(data))
    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        run = asyncio.run(service.execute(service.start(RunRequest("gated_consistency", {}))))
        assert run.status != RunStatus.DONE
        (failed,) = events(ctx, run.id, StepFailed)
        assert (failed.step_id, failed.error_type) == ("tool_gate", "GateFailedError")
        assert failed.error == (
            "review gate 'tool_gate' FAIL (verdict in slot 'consistency_report'): 1) Kael: eyes "
            "canon 'grey', the text says 'green' in “His green eyes narrowed at the cut marks on "
            "the trunk.” (Story/Scenes/SCN-02-the-ambush.md:3)"
        )
        assert fail_kinds == ["gate"]
        completed = [e.step_id for e in events(ctx, run.id, StepCompleted)]
        assert "tool_gate" not in completed and "write" not in completed
        assert not (workspace / "control-room-reports" / "review.json").exists()
    finally:
        ctx.close()


# -- rollback targets of every agent kind read their overrides ----------------------------

NOTE = "GATE-FEEDBACK-7f3: Kael's eyes are grey, not green."


class AgainWithOverrides:
    """Runs `plan` (a packet agent) and `write_beats` (a for-each) once more, with the
    overrides a gate's rollback gives."""

    name = "test_again_with_overrides"
    overrides = Overrides(prompt_additions=(NOTE,))

    def decide(self, view: RunView) -> RunStep | StepsDone | FailRun:
        last = view.history[-1] if view.history else None
        if (
            view.failure is None
            and last is not None
            and last.instance_id in ("plan", "write_beats")
        ):
            return RunStep(last.index, self.overrides, reason="as a gate's rollback would")
        return LINEAR.decide(view)


@pytest.fixture
def again() -> Iterator[type[AgainWithOverrides]]:
    FLOWS.register(AgainWithOverrides())
    yield AgainWithOverrides
    FLOWS.unregister(AgainWithOverrides.name)


def _playbook(workspace: Path, flow: str) -> tuple[Context, Run]:
    data: dict[str, Any] = json.loads((BUNDLED_DIR / "write_scene_from_outline.json").read_text())
    data["flow"] = flow
    write_override(workspace, "write_scene_from_outline.json", json.dumps(data))
    ctx = Context.open(workspace)
    service = RunService(ctx)
    run = service.start(
        RunRequest("write_scene_from_outline", {}, description="write scene 4 beat by beat")
    )
    return ctx, asyncio.run(service.execute(run))


def test_packet_agents_and_loops_read_the_prompt_additions_of_their_instance(
    workspace: Path, again: type[AgainWithOverrides]
) -> None:
    ctx, run = _playbook(workspace, again.name)
    try:
        assert run.status == RunStatus.DONE, run.error
        bodies = {
            e.ref: json.dumps(RunService(ctx).request_body(e))
            for e in events(ctx, run.id, ModelRequestRecorded)
        }
        responded = events(ctx, run.id, AgentResponded)
        plans = [e for e in responded if e.step_id == "plan"]
        assert len(plans) == 2
        first, second = (bodies[p.request_ref] for p in plans)
        assert NOTE not in first and NOTE in second
        items = [
            e for e in ctx.store.stream(run.id)
            if type(e).__name__ == "ForEachItemCompleted"
        ]  # fmt: skip
        by_instance: dict[str, list[str]] = {}
        for item in items:
            by_instance.setdefault(item.instance_id, []).append(bodies[item.request_ref])
        assert set(by_instance) == {"write_beats", "write_beats#2"}
        assert not any(NOTE in body for body in by_instance["write_beats"])
        assert len(by_instance["write_beats#2"]) == 3
        assert all(NOTE in body for body in by_instance["write_beats#2"])
    finally:
        ctx.close()


def test_packet_agents_are_served_by_the_model_their_instance_names(
    workspace: Path, again: type[AgainWithOverrides], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(again, "overrides", Overrides(model="nowhere:big-model"))
    ctx, run = _playbook(workspace, again.name)
    try:
        assert run.status == RunStatus.FAILED
        (failed,) = events(ctx, run.id, StepFailed)
        assert failed.instance_id == "plan#2" and "'nowhere' is not configured" in failed.error
    finally:
        ctx.close()


def test_a_loop_is_served_by_the_model_its_instance_names(
    workspace: Path, again: type[AgainWithOverrides], monkeypatch: pytest.MonkeyPatch
) -> None:
    class LoopOnly(AgainWithOverrides):
        name = "test_loop_model"
        overrides = Overrides(model="nowhere:big-model")

        def decide(self, view: RunView) -> RunStep | StepsDone | FailRun:
            last = view.history[-1] if view.history else None
            if view.failure is None and last is not None and last.instance_id == "write_beats":
                return RunStep(last.index, self.overrides, reason="another model")
            return LINEAR.decide(view)

    FLOWS.register(LoopOnly())
    try:
        ctx, run = _playbook(workspace, LoopOnly.name)
        try:
            (failed,) = events(ctx, run.id, StepFailed)
            assert failed.instance_id == "write_beats#2"
            assert "'nowhere' is not configured" in failed.error
        finally:
            ctx.close()
    finally:
        FLOWS.unregister(LoopOnly.name)


def test_the_bundled_recipes_gate_before_they_write() -> None:
    """Each gate stands before the recipe's write, and reads what the issue asks of it."""
    from controlroom.recipes.catalog import RecipeCatalog

    catalog = RecipeCatalog.load(None, TOOLS, PROMPTS, strict=True)
    gates = {
        (r.recipe_id, s.step_id): s
        for r in catalog.recipes()
        for s in r.steps
        if isinstance(s, ReviewGateStep)
    }
    summary = {
        key: (g.verdict_slot, g.rollback_to, g.max_rollbacks, g.severity)
        for key, g in gates.items()
    }
    assert summary == {
        ("creative_draft_scene", "continuity_gate"): ("continuity_report", "draft", 2, "blocking"),
        ("creative_draft_scene", "critic_gate"): ("critique", "polish", 1, "advisory"),
        ("write_scene_from_outline", "plan_gate"): ("plan_continuity", "plan", 2, "blocking"),
        ("write_scene_from_outline", "final_gate"): ("final_continuity", "edit", 2, "blocking"),
        ("analytical_consistency", "findings_gate"): (None, "review", 2, "blocking"),
        ("analytical_consistency", "corrections_gate"): (None, "corrections", 2, "blocking"),
        ("analytical_prose", "prose_gate"): ("prose_verdict", "revise", 1, "advisory"),
        ("revision_pass", "specify_exit"): (None, "specify", 2, "blocking"),
        ("revision_pass", "review"): (None, "revise", 2, "blocking"),
    }
    consistency = catalog.get("analytical_consistency")
    # No model's `pass` decides its DoD: the tool's own findings do.
    assert isinstance(consistency.dod[0], SlotFieldEmpty)
    assert (consistency.dod[0].slot, consistency.dod[0].field) == ("consistency_report", "findings")
    for gate in gates.values():
        if gate.checks:
            # each finding, and each card fact about a person the check could not read
            assert all(
                c.items.ref
                in ("consistency_report.findings", "consistency_report.unchecked_descriptions")
                for c in gate.checks
                if isinstance(c, SlotMentionsEach)
            )
    for recipe in catalog.recipes():
        ids = [s.step_id for s in recipe.steps]
        writes = [i for i, s in enumerate(recipe.steps) if s.kind == "write_file"]
        for (recipe_id, step_id), _ in gates.items():
            if recipe_id == recipe.recipe_id:
                assert all(ids.index(step_id) < w for w in writes)
