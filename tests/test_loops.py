"""Adaptive loops (seed 003): the loop's code (allowed steps, criteria, stalls, scope), the
Showrunner's turns through the engine, and what a real model's bad replies do."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.errors import RecipeInvalidError
from controlroom.domain.flow import PastDecision, Performed, RunView
from controlroom.domain.flow_events import FlowDecided
from controlroom.domain.loop_spec import LoopScope
from controlroom.domain.loops import allowed_next, judge, stall, typical_next
from controlroom.domain.recipe import Recipe
from controlroom.domain.recipe_check import validate_recipe
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import AgentReplyRejected, FileWritten
from controlroom.domain.showrunner import choice_errors
from controlroom.engine.context import Context
from controlroom.engine.followers import Followers
from controlroom.engine.service import RunRequest, RunService
from controlroom.models.agents import AgentDirectory
from controlroom.models.offline import OfflineModel
from controlroom.models.port import ModelRequest, ModelResponse, TextSink
from controlroom.prompts.registry import PromptRegistry
from controlroom.tools.base import ToolRegistry
from tests.conftest import REPO, write_override

STYLE = REPO / "recipes" / "loop_style_tune_up.json"


def style_recipe(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(STYLE.read_text())
    data.update(changes)
    return data


def recipe() -> Recipe:
    return Recipe.model_validate(style_recipe())


def view(
    r: Recipe,
    done: list[tuple[str, str]],
    slots: dict[str, Any] | None = None,
    decisions: tuple[PastDecision, ...] = (),
) -> RunView:
    """A run's view after `done` ((step id, output hash) in order)."""
    ids = [s.step_id for s in r.steps]
    seen: dict[str, int] = {}
    history = []
    for step_id, digest in done:
        n = seen.get(step_id, 0)
        seen[step_id] = n + 1
        instance = step_id if n == 0 else f"{step_id}#{n + 1}"
        history.append(Performed(ids.index(step_id), step_id, instance, digest))
    return RunView(r, tuple(history), slots or {}, decisions, seen)


PHASE_A = [("discover", "h0"), ("analyze_prose", "h1")]
REPORT = {"files": {"a.md": {"adverbs": ["slowly"]}}}


# -- the loop's code ---------------------------------------------------------------------------


def test_only_steps_whose_inputs_are_written_and_under_their_cap_are_allowed() -> None:
    r = recipe()
    spec = r.loop
    assert spec is not None
    first = view(r, PHASE_A, {"prose_report": REPORT})
    assert allowed_next(spec, first) == ["tone_survey"]
    later = view(
        r,
        [*PHASE_A, ("tone_survey", "a"), ("revise_prose", "b")],
        {"prose_report": REPORT, "style_notes": {"artifact": "x"}, "style_revision": {}},
    )
    assert allowed_next(spec, later) == ["tone_survey", "revise_prose", "style_gate"]
    capped = view(
        r,
        [*PHASE_A, ("tone_survey", "a")] + [("revise_prose", f"r{i}") for i in range(4)],
        {"prose_report": REPORT, "style_notes": {"artifact": "x"}, "style_revision": {}},
    )
    assert "revise_prose" not in allowed_next(spec, capped)  # max_repeats_per_step 4


def test_stability_is_judged_from_the_gate_verdict_given_after_the_latest_work() -> None:
    r = recipe()
    spec = r.loop
    assert spec is not None
    slots = {"style_gate_report": {"verdict": "PASS", "findings": [], "back_to": None}}
    run = [*PHASE_A, ("tone_survey", "a"), ("revise_prose", "b"), ("style_gate", "g")]
    held = judge(spec, r, view(r, run, slots))
    assert all(held.values()), held
    # The same PASS, but a revision ran after it: the verdict is stale, the loop not stable.
    stale = judge(spec, r, view(r, [*run, ("revise_prose", "c")], slots))
    assert stale["gate_passed:style_gate"] is False
    # A PASS that still lists findings is not a pass (the gates' fail-closed reading).
    contradicting = {"style_gate_report": {"verdict": "PASS", "findings": [{"message": "x"}]}}
    assert not judge(spec, r, view(r, run, contradicting))["gate_passed:style_gate"]


def test_the_same_output_twice_or_no_criterion_improving_is_a_stall() -> None:
    r = recipe()
    spec = r.loop
    assert spec is not None
    same = [*PHASE_A, ("tone_survey", "a"), ("revise_prose", "sha256:x"), ("style_gate", "g")]
    same += [("revise_prose", "sha256:x")]
    why = stall(spec, view(r, same), 1)
    assert why is not None and "revise_prose#2" in why and "same output" in why
    changed = [*same[:-1], ("revise_prose", "sha256:y")]
    assert stall(spec, view(r, changed), 1) is None
    turns = tuple(
        PastDecision(None, "decide", None, "", loop={"kind": "turn", "held": 1}) for _ in range(4)
    )
    assert "without progress" in str(stall(spec, view(r, changed, decisions=turns), 1))
    assert stall(spec, view(r, changed, decisions=turns), 2) is None  # one more holds now


def test_the_typical_flow_goes_back_to_the_step_a_failing_gate_names() -> None:
    flow = ["survey", "revise", "gate"]
    assert typical_next(["survey"], flow, None, None) == "survey"
    assert typical_next(["survey", "revise", "gate"], flow, "survey", None) == "revise"
    assert typical_next(["survey", "revise", "gate"], flow, "gate", "revise") == "revise"
    assert typical_next(["survey", "gate"], flow, "gate", "revise") == "survey"  # not allowed


def test_a_showrunner_reply_outside_what_code_allows_is_refused_with_reasons() -> None:
    roles = {"revise": ["writer", "editor"], "gate": ["gatekeeper"]}
    ok = {"next": "revise", "role": "editor", "reason": "r"}
    assert choice_errors(ok, ["revise", "gate"], roles, None, False) == []
    (wrong,) = choice_errors({**ok, "next": "rewrite_everything"}, ["revise"], roles, None, False)
    assert "not allowed now" in wrong and "revise" in wrong
    (role,) = choice_errors({**ok, "role": "critic"}, ["revise"], roles, None, False)
    assert "may not run" in role
    (stable,) = choice_errors({**ok, "next": "stable"}, ["revise"], roles, None, False)
    assert "judged from the loop's criteria" in stable
    (unanswered,) = choice_errors(ok, ["revise"], roles, "continuity", False)
    assert "approve or deny" in unanswered
    assert choice_errors("revise", ["revise"], roles, None, False)  # not an object


def test_a_loop_recipe_that_could_leave_its_scope_is_refused_at_load() -> None:
    data = style_recipe()
    data["phase_b"][-1]["path"] = "Story/SCN-outline.md"  # the outline, written by the loop
    data["loop"]["library"][0]["produces"] = ["style_notes"]
    data["loop"]["scope"]["slots"] = ["style_revision", "style_gate_report"]
    with pytest.raises(RecipeInvalidError) as refused:
        validate_recipe(data, "loop.json", TOOLS, PROMPTS)
    text = str(refused.value)
    assert "$.phase_b[5].path" in text and "forbidden" in text
    assert "$.loop.library[0].produces" in text and "outside the loop's scope" in text
    data = style_recipe(flow=None)
    data["loop"]["decider"] = "tone_survey"
    with pytest.raises(RecipeInvalidError) as refused:
        validate_recipe(data, "loop.json", TOOLS, PROMPTS)
    assert "adaptive flow" in str(refused.value) and "kind showrunner" in str(refused.value)


def test_scope_paths_forbid_before_they_allow() -> None:
    scope = LoopScope(summary="s", paths=["Story/**"], forbidden=["Story/SCN-outline.md"])
    assert scope.path_problem("Story/Scenes/a.md") is None
    assert "forbidden" in str(scope.path_problem("Story/SCN-outline.md"))
    assert "may write" in str(scope.path_problem("Compendium/x.md"))


TOOLS = ToolRegistry.default().names()
PROMPTS = PromptRegistry.for_workspace(None).prompt_types()


# -- through the engine ------------------------------------------------------------------------


class Wrapped:
    """The offline model, with one prompt type's replies changed by `change`."""

    provider = "offline"

    def __init__(self, prompt_type: str, change: Any) -> None:
        self.prompt_type, self.change = prompt_type, change
        self.offline = OfflineModel()
        self.calls: list[ModelRequest] = []
        self.seen: list[ModelRequest] = []  # every request, of every prompt type

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        return self.offline.request_body(request)

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        self.seen.append(request)
        answer = await self.offline.complete(request, on_text)
        if request.prompt_type != self.prompt_type:
            return answer
        self.calls.append(request)
        return ModelResponse(text=self.change(answer.text, request), usage=answer.usage)


def run_loop(
    workspace: Path, model: Any = None, recipe_id: str = "loop_style_tune_up"
) -> tuple[Run, list[Any]]:
    agents = AgentDirectory(clients={"offline": model}) if model is not None else None
    ctx = Context.open(workspace, agents=agents) if agents else Context.open(workspace)
    try:
        service = RunService(ctx)
        run = asyncio.run(service.execute(service.start(RunRequest(recipe_id, {}))))
        Followers(ctx.store).catch_up()
        return run, [p.event for p in ctx.store.read_log()]
    finally:
        ctx.close()


def turns(events: list[Any]) -> list[dict[str, Any]]:
    return [dict(e.loop) for e in events if isinstance(e, FlowDecided) and e.loop]


def test_a_loop_whose_gate_fails_once_goes_back_revises_and_stabilizes(workspace: Path) -> None:
    run, events = run_loop(workspace)
    assert run.status == RunStatus.DONE and run.outcome == 0
    loop = turns(events)
    choices = [t["choice"] for t in loop if t["kind"] == "choice"]
    assert choices == ["tone_survey", "revise_prose", "style_gate", "revise_prose", "style_gate"]
    assert not any(t["fallback"] for t in loop if t["kind"] == "choice")
    (end,) = [t for t in loop if t["kind"] == "end"]
    assert end["ending"] == "stable" and all(end["criteria"].values())
    asked = [t for t in loop if t["kind"] == "turn"]
    assert asked[0]["candidates"] == ["tone_survey"]
    assert [t["held"] for t in asked] == sorted(t["held"] for t in asked)  # never worse
    for choice in (t for t in loop if t["kind"] == "choice"):
        assert str(choice["tier1_sha256"]).startswith("sha256:")
        assert str(choice["tier2_sha256"]).startswith("sha256:")
    # The revision was told the gate's findings, in its prompt.
    revised = run.slot_values["style_revision"]
    assert "SCN-03-the-archive.md: slowly" in revised["addressed"]
    assert run.slot_values["style_gate_report"]["verdict"] == "PASS"
    (written,) = [e for e in events if isinstance(e, FileWritten)]
    assert written.path.startswith("control-room-reports/style-tune-up/")


def test_a_reply_naming_a_step_outside_the_allowed_set_is_asked_again_then_falls_back(
    workspace: Path,
) -> None:
    # A real model's bad replies: prose around fenced JSON naming a step that does not
    # exist, then wrong types, then JSON that is fine but names a disallowed step.
    bad = iter(
        [
            'Let us rewrite it all.\n```json\n{"next": "rewrite_outline", "reason": "bold"}\n```',
            '{"next": 3, "role": ["writer"], "reason": null}',
            '{"next": "style_gate", "role": null, "notes": "", "collaboration": null, '
            '"reason": "skip ahead"}',
        ]
    )
    model = Wrapped("showrunner_turn", lambda text, _r: next(bad, text))
    run, events = run_loop(workspace, model)
    rejected = [e for e in events if isinstance(e, AgentReplyRejected) and e.step_id == "decide"]
    assert len(rejected) == 3
    assert "not allowed now" in " ".join(rejected[0].errors)
    loop = turns(events)
    first = next(t for t in loop if t["kind"] == "choice")
    assert first["fallback"] is True and first["choice"] == "tone_survey"
    assert first["errors"]
    # The run goes on from the typical flow and stabilizes like the plain one.
    assert run.status == RunStatus.DONE
    assert [t["ending"] for t in loop if t["kind"] == "end"] == ["stable"]


def test_a_stalled_loop_without_a_ladder_ends_needing_escalation(workspace: Path) -> None:
    def ignore_findings(text: str, request: ModelRequest) -> str:
        # A writer that never reads the gate's findings: the same revision every time.
        value = json.loads(text)
        value["addressed"] = value["addressed"][:3]
        value["artifact"] = "the same revision"
        return json.dumps(value)

    run, events = run_loop(workspace, Wrapped("loop_work", ignore_findings))
    assert run.status == RunStatus.FAILED and run.outcome == 11
    (stalled,) = [t for t in turns(events) if t["kind"] == "stall"]
    assert stalled["subject"] == "revise_prose" and "same output" in stalled["stall"]


def test_a_stalled_loop_climbs_the_stalled_steps_ladder(workspace: Path) -> None:
    # The writer's own model never reads what the flow adds to its prompt (a fault model
    # answering from its inputs alone), so its revision repeats itself; its ladder's
    # next model does read the gate's findings.
    settings = {
        "providers": {"offline": {"type": "offline",
                                  "faults": {"weak-1": {"fault": "contradict_canon"}}}},
        "roles": {"writer": {"provider": "offline", "model": "weak-1",
                             "escalation": [{"provider": "offline",
                                             "model": "offline-deterministic-1"}]}},
    }  # fmt: skip
    (workspace / ".control-room").mkdir(exist_ok=True)
    (workspace / ".control-room" / "models.json").write_text(json.dumps(settings))
    run, events = run_loop(workspace)
    loop = turns(events)
    (stalled,) = [t for t in loop if t["kind"] == "stall"]
    assert stalled["subject"] == "revise_prose" and "same output" in stalled["stall"]
    rungs = [e.rung for e in events if isinstance(e, FlowDecided) and e.rung]
    assert rungs[0]["kind"] == "escalate"
    assert rungs[0]["to_model"] == "offline:offline-deterministic-1"
    assert run.status == RunStatus.DONE, run.error
    assert [t["ending"] for t in loop if t["kind"] == "end"] == ["stable"]


def test_a_style_tune_up_that_tries_to_change_the_outline_is_stopped(workspace: Path) -> None:
    data = style_recipe(recipe_id="style_to_file")
    data["phase_b"][-1]["path"] = {"$ref": "style_revision.path"}
    data["loop"]["scope"]["paths"] = ["control-room-reports/**", "Story/Scenes/**"]
    write_override(workspace, "style_to_file.json", json.dumps(data))
    outline = workspace / "Story" / "SCN-outline.md"
    before = outline.read_bytes()

    def aim_at_outline(text: str, request: ModelRequest) -> str:
        value = json.loads(text)
        value["path"] = "Story/SCN-outline.md"
        return json.dumps(value)

    run, events = run_loop(workspace, Wrapped("loop_work", aim_at_outline), "style_to_file")
    assert run.status == RunStatus.FAILED
    assert "outside the loop's scope" in str(run.error) and "SCN-outline.md" in str(run.error)
    assert outline.read_bytes() == before
    assert not [e for e in events if isinstance(e, FileWritten)]


def test_a_collaboration_asked_for_is_approved_and_joins_the_requesters_next_attempt(
    workspace: Path,
) -> None:
    def ask_once(text: str, request: ModelRequest) -> str:
        value = json.loads(text)
        if request.agent_archetype == "style_lead" and "<collaboration" not in request.prompt:
            value["collaboration"] = {"role": "editor", "reason": "which adverbs are voice"}
        return json.dumps(value)

    model = Wrapped("loop_work", ask_once)
    run, events = run_loop(workspace, model)
    loop = turns(events)
    (approved,) = [t for t in loop if t.get("collaborator_for")]
    assert approved["collaboration"] == "approve" and approved["collaborator_role"] == "editor"
    surveys = [r for r in model.calls if r.agent_archetype == "style_lead"]
    assert len(surveys) == 2  # the requester went again, with the editor's contribution
    assert '<collaboration role="editor">' in surveys[1].prompt
    helper = [r for r in model.seen if r.prompt_type == "loop_collaborate"]
    assert [r.agent_archetype for r in helper] == ["editor"]  # woken as the role asked for
    assert helper and "which adverbs are voice" in helper[0].prompt
    assert run.status == RunStatus.DONE


def test_a_denied_collaboration_runs_no_collaborator(workspace: Path) -> None:
    def ask_a_stranger(text: str, request: ModelRequest) -> str:
        value = json.loads(text)
        if request.agent_archetype == "style_lead":
            value["collaboration"] = {"role": "astrologer", "reason": "the stars"}
        return json.dumps(value)

    run, events = run_loop(workspace, Wrapped("loop_work", ask_a_stranger))
    denied = [t for t in turns(events) if t.get("collaboration") == "deny"]
    assert denied and not [t for t in turns(events) if t.get("collaborator_for")]
    assert run.status == RunStatus.DONE


def test_a_loop_at_its_caps_ends_capped_a_partial_success_its_parent_sees(
    workspace: Path,
) -> None:
    data = style_recipe(recipe_id="short_loop")
    data["loop"]["caps"] = {"max_iterations": 2, "max_repeats_per_step": 2, "stall_limit": 2}
    write_override(workspace, "short_loop.json", json.dumps(data))
    run, events = run_loop(workspace, None, "short_loop")
    (end,) = [t for t in turns(events) if t["kind"] == "end"]
    assert end["ending"] == "capped" and "max_iterations 2" in run.decisions[-1].reason
    # The DoD reads the gate's report, which a capped loop never wrote: failed, code 1;
    # with nothing failing, a capped loop would end 12 (PARTIAL_SUCCESS).
    assert run.status == RunStatus.FAILED and run.outcome == 1


def test_the_showrunner_may_ask_a_person_and_the_run_ends_waiting_for_one(
    workspace: Path,
) -> None:
    asking = '{"next": "ask_person", "role": null, "notes": "", "collaboration": null, '
    asking += '"reason": "the style guide contradicts itself"}'
    run, _ = run_loop(workspace, Wrapped("showrunner_turn", lambda _t, _r: asking))
    assert run.status == RunStatus.FAILED and run.outcome == 3
    assert "the style guide contradicts itself" in str(run.error)


def test_resume_reads_the_recorded_turns_and_never_asks_the_showrunner_again(
    workspace: Path,
) -> None:
    run, _ = run_loop(workspace)
    ctx = Context.open(workspace)
    try:
        rebuilt = ctx.store.load(Run, run.id)
        assert rebuilt is not None
        assert [d.loop for d in rebuilt.decisions] == [d.loop for d in run.decisions]
    finally:
        ctx.close()
