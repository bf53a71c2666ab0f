"""Offline faults: models.json names faulty offline models, each failing deterministically
the way a real model would reach the engine (a 500, a reply cut at the token limit, prose
for a contract, a draft that contradicts canon, a check that fails), keyed by the model's
name and never by a count of calls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.errors import (
    ModelCallError,
    ModelConfigError,
    ReplyCutError,
)
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import (
    AgentReplyRejected,
    AgentResponded,
    ModelAttemptFailed,
    StepFailed,
    StopHook,
)
from controlroom.engine.context import Context
from controlroom.engine.model_call import Retrying
from controlroom.engine.runner import failure_kind
from controlroom.engine.service import RunRequest, RunService
from controlroom.models.agents import AgentDirectory
from controlroom.models.config import (
    OFFLINE_MODEL,
    OfflineFault,
    ProviderConfig,
    load_models_config,
)
from controlroom.models.offline import OfflineModel
from controlroom.models.offline_faults import FEEDBACK_MARK, PROSE_REPLY
from controlroom.models.offline_roles import check_continuity
from controlroom.models.port import ModelRequest
from controlroom.prompts.contracts import BUNDLED, schema_of

FAULTS = {
    "flaky-1": {"fault": "http_500"},
    "sloppy-1": {"fault": "prose"},
    "short-1": {"fault": "cut"},
    "careless-1": {"fault": "contradict_canon", "until_feedback": True},
    "harsh-1": {"fault": "verdict_fail"},
}
CANON = "Canon: 1 cards, 2 facts\n- Kael: eyes = grey\n- Kael: hair = black"
BRIEF = (
    "# Scene brief: Scene 4 — The Reckoning\nPOV: Kael\nCharacters: Kael\nBeats:\n"
    "1. Kael waits at the gate\nCanon to honour:\n- Kael: eyes = grey\n- Kael: hair = black"
)
DRAFT = "# S\n\nKael turned. His grey eyes caught the light."


def write_models(workspace: Path, config: dict[str, Any]) -> None:
    folder = workspace / ".control-room"
    folder.mkdir(exist_ok=True)
    (folder / "models.json").write_text(json.dumps(config))


def configure(workspace: Path, roles: dict[str, str], **role: Any) -> None:
    """The offline provider with every fault, and each role on the model named."""
    write_models(
        workspace,
        {
            "providers": {"offline": {"type": "offline", "faults": FAULTS}},
            "roles": {r: {"provider": "offline", "model": m, **role} for r, m in roles.items()},
        },
    )


def draft(workspace: Path) -> tuple[Run, list[Any]]:
    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        run = asyncio.run(service.execute(service.start(RunRequest("Draft scene 4", {}))))
        return run, ctx.store.stream(run.id)
    finally:
        ctx.close()


def first(events: list[Any], kind: type[Any], step_id: str) -> Any:
    """The step's first such event (a gate or a ladder may run the step again later)."""
    return next(e for e in events if isinstance(e, kind) and e.step_id == step_id)


def request(
    model: str,
    prompt_type: str,
    inputs: dict[str, str],
    prompt: str = "Draft the scene.",
    contract: str | None = None,
    **params: Any,
) -> ModelRequest:
    return ModelRequest(
        provider="offline",
        model=model,
        tier="t3",
        agent_archetype="x",
        prompt_type=prompt_type,
        prompt=prompt,
        inputs=inputs,
        task_description="Draft scene 4",
        params=params,
        response_schema=schema_of(BUNDLED[contract]) if contract else None,
        contract_name=contract,
    )


def faulty() -> OfflineModel:
    return OfflineModel(faults={m: OfflineFault.model_validate(f) for m, f in FAULTS.items()})


def ask(req: ModelRequest) -> str:
    return asyncio.run(faulty().complete(req)).text


# -- configuration --------------------------------------------------------------------------


def test_faults_on_a_provider_that_is_not_offline_are_refused_naming_it(
    workspace: Path,
) -> None:
    write_models(
        workspace,
        {
            "providers": {
                "remote": {
                    "type": "openai",
                    "base_url": "http://127.0.0.1:9/v1",
                    "faults": {"flaky-1": {"fault": "http_500"}},
                }
            }
        },
    )
    with pytest.raises(ModelConfigError, match=r"provider 'remote' \(type openai\) has faults"):
        load_models_config(workspace)


def test_an_unknown_fault_kind_is_refused_naming_its_json_path(workspace: Path) -> None:
    write_models(
        workspace,
        {"providers": {"offline": {"type": "offline", "faults": {"odd-1": {"fault": "melt"}}}}},
    )
    with pytest.raises(ModelConfigError, match=r"\$\.providers\.offline\.faults\.odd-1\.fault"):
        load_models_config(workspace)


def test_a_model_neither_deterministic_nor_faulty_is_refused(workspace: Path) -> None:
    configure(workspace, {"writer": "flaky-2"})
    with pytest.raises(ModelConfigError, match=r"serves .*'flaky-1'.*, not 'flaky-2'"):
        load_models_config(workspace)
    with pytest.raises(ModelConfigError, match="not 'flaky-2'"):
        ask(request("flaky-2", "draft_scene", {"scene_brief": BRIEF}))
    assert faulty().serves("flaky-1") and faulty().serves(OFFLINE_MODEL)
    assert not OfflineModel().serves("flaky-1")  # no faults configured: not served
    with pytest.raises(ModelConfigError, match="not 'flaky-1'"):
        asyncio.run(OfflineModel().complete(request("flaky-1", "draft_scene", {})))


def test_the_deterministic_model_cannot_be_made_faulty(workspace: Path) -> None:
    write_models(
        workspace,
        {
            "providers": {
                "offline": {"type": "offline", "faults": {OFFLINE_MODEL: {"fault": "prose"}}}
            }
        },
    )
    with pytest.raises(ModelConfigError, match=f"'{OFFLINE_MODEL}' in its faults"):
        load_models_config(workspace)


def test_an_offline_provider_retries_without_waiting_unless_it_says_so(workspace: Path) -> None:
    assert ProviderConfig(type="offline").backoff_s == 0.0
    assert ProviderConfig(type="offline", backoff_s=0.25).backoff_s == 0.25
    assert ProviderConfig(type="openai").backoff_s == 0.5
    configure(workspace, {"writer": "flaky-1"})
    config = load_models_config(workspace)
    assert config.all_providers()["offline"].faults["flaky-1"].fault == "http_500"


# -- each fault, through a real run ------------------------------------------------------------


def test_http_500_fails_every_attempt_and_the_step_as_a_transport_failure(
    workspace: Path,
) -> None:
    configure(workspace, {"writer": "flaky-1"})
    run, events = draft(workspace)
    assert run.status != RunStatus.DONE
    attempts = [e for e in events if isinstance(e, ModelAttemptFailed)][:4]
    assert [(a.attempt, a.kind, a.status, a.will_retry) for a in attempts] == [
        (1, "server_error", 500, True),
        (2, "server_error", 500, True),
        (3, "server_error", 500, True),
        (4, "server_error", 500, False),
    ]
    assert {(a.provider, a.model, a.retry_in_s) for a in attempts} == {("offline", "flaky-1", 0)}
    failed = first(events, StepFailed, "draft")
    assert failed.error_type == "ModelCallError"
    assert "failed after 4 attempt(s)" in failed.error and "HTTP 500" in failed.error


def test_a_transport_failure_after_the_retries_is_a_model_call_error_for_the_flow() -> None:
    config = ProviderConfig(type="offline", max_retries=1, faults=FAULTS)
    retrying = Retrying(
        faulty(), config, deadline_s=5, caller="agent 'writer'", provider="offline", model="x"
    )
    with pytest.raises(ModelCallError) as raised:
        asyncio.run(retrying.reply(request("flaky-1", "draft_scene", {"scene_brief": BRIEF})))
    assert raised.value.kind == "server_error" and raised.value.status == 500
    assert failure_kind(raised.value) == "transport"
    assert retrying.attempt == 2


def test_cut_fails_the_step_with_the_reply_cut_at_the_token_limit(workspace: Path) -> None:
    configure(workspace, {"writer": "short-1"}, params={"max_tokens": 40})
    run, events = draft(workspace)
    assert run.status != RunStatus.DONE
    attempt = first(events, ModelAttemptFailed, "draft")
    assert (attempt.attempt, attempt.kind, attempt.will_retry) == (1, "unusable", False)
    failed = first(events, StepFailed, "draft")
    assert failed.error_type == "ReplyCutError"
    assert "cut off at the token limit (max_tokens 40, finish_reason=length)" in failed.error


def test_a_cut_reply_stops_within_the_limit_streams_what_came_and_costs_its_tokens() -> None:
    whole = ask(request(OFFLINE_MODEL, "draft_scene", {"scene_brief": BRIEF}))
    streamed: list[str] = []
    with pytest.raises(ReplyCutError) as raised:
        asyncio.run(
            faulty().complete(
                request("short-1", "draft_scene", {"scene_brief": BRIEF}, max_tokens=8),
                streamed.append,
            )
        )
    got = "".join(streamed).strip()
    assert got and whole.startswith(got) and len(got.split()) == 6  # 8 tokens: 6 words
    assert raised.value.max_tokens == 8 and raised.value.kind == "unusable"
    assert not raised.value.retryable
    assert raised.value.usage is not None and raised.value.usage.estimated
    assert raised.value.usage.output_tokens == 8
    with pytest.raises(ReplyCutError, match="the server's limit"):  # no max_tokens: half
        ask(request("short-1", "draft_scene", {"scene_brief": BRIEF}))


def test_prose_for_a_contract_ends_in_stop_hook_and_is_kept_without_one(
    workspace: Path,
) -> None:
    configure(workspace, {"writer": "sloppy-1", "continuity": "sloppy-1"})
    run, events = draft(workspace)
    assert run.status != RunStatus.DONE
    draft_reply = first(events, AgentResponded, "draft")
    assert draft_reply.output == PROSE_REPLY and draft_reply.model == "sloppy-1"
    assert draft_reply.usage.estimated and draft_reply.usage.output_tokens > 0
    rejected = [e for e in events if isinstance(e, AgentReplyRejected)][:3]
    assert [(r.step_id, r.reply, r.will_retry) for r in rejected] == [
        ("continuity", PROSE_REPLY, True),
        ("continuity", PROSE_REPLY, True),
        ("continuity", PROSE_REPLY, False),
    ]
    assert all(r.usage is not None and r.usage.output_tokens > 0 for r in rejected)
    stop = first(events, StopHook, "continuity")
    assert stop.contract == "continuity_report" and stop.attempts == 3
    assert first(events, StepFailed, "continuity").error_type == "AgentOutputInvalidError"


def test_contradict_canon_writes_a_draft_the_continuity_check_fails(workspace: Path) -> None:
    configure(workspace, {"writer": "careless-1"})
    _, events = draft(workspace)
    # The first draft and its check: a review gate may send the writer back with feedback.
    writer = first(events, AgentResponded, "draft")
    assert writer.model == "careless-1" and "Kael's blue eyes" in writer.output
    report = json.loads(first(events, AgentResponded, "continuity").output)
    assert report["pass"] is False, report
    (conflict,) = report["conflicts"]
    assert (conflict["entity"], conflict["attribute"], conflict["canon_value"]) == (
        "Kael",
        "eyes",
        "grey",
    )
    assert conflict["found"] == "blue"


def test_contradict_canon_until_feedback_writes_true_to_canon_once_feedback_comes() -> None:
    shown = {"scene_brief": BRIEF, "canon_context": CANON}
    careless = ask(request("careless-1", "draft_scene", shown))
    feedback = f"{FEEDBACK_MARK}>Kael's eyes are grey.</review_feedback>"
    corrected = ask(request("careless-1", "draft_scene", shown, prompt=f"Draft.\n\n{feedback}"))
    assert corrected == ask(request(OFFLINE_MODEL, "draft_scene", shown))

    def verdict(text: str) -> bool:
        passed: bool = json.loads(
            check_continuity("t", [("edited_draft", text), ("canon", CANON)])
        )["pass"]
        return passed

    assert verdict(careless) is False and verdict(corrected) is True
    # Stateless: the same request gets the same careless draft, however often it is asked.
    assert ask(request("careless-1", "draft_scene", shown)) == careless


def test_contradict_canon_reaches_the_editor_and_the_playbook_writer() -> None:
    edited = ask(request("careless-1", "polish_draft", {"draft": DRAFT}))
    assert "blue eyes" in edited and "grey" not in edited
    receipt = json.loads(
        ask(
            request(
                "careless-1",
                "write_beat",
                {"item": "Kael waits at the gate", "scene_plan": "# Plan\nCharacters: Kael\n"},
                contract="receipt_reply",
            )
        )
    )
    assert "Kael's violet eyes" in receipt["output"]


def test_verdict_fail_fails_the_continuity_check(workspace: Path) -> None:
    configure(workspace, {"continuity": "harsh-1"})
    run, events = draft(workspace)
    report = json.loads(first(events, AgentResponded, "continuity").output)
    assert report["pass"] is False and len(report["conflicts"]) == 1
    assert report["conflicts"][0]["canon_value"] in run.slot_texts["canon_context"]
    assert run.status != RunStatus.DONE  # the Definition of Done reads `pass`


def test_verdict_fail_makes_the_critic_ask_for_a_revision(workspace: Path) -> None:
    configure(workspace, {"critic": "harsh-1"})
    _, events = draft(workspace)
    assert json.loads(first(events, AgentResponded, "continuity").output)["pass"] is True
    critique = json.loads(first(events, AgentResponded, "critique").output)
    assert critique["verdict"] == "revise" and critique["problems"]
    assert 1 <= critique["score"] <= 4


def test_verdict_fail_fails_other_checks_and_passes_once_feedback_comes() -> None:
    review = json.loads(
        ask(request("harsh-1", "review_consistency", {"x": CANON}, contract="consistency_review"))
    )
    assert review["pass"] is False and len(review["findings"]) == 1
    assert "canon says 'grey'" in review["findings"][0]["message"]
    validity = json.loads(
        ask(request("harsh-1", "confirm_scene_validity", {"x": ""}, contract="scene_validity"))
    )
    assert validity["pass"] is False and validity["failed_checks"]
    packet = json.loads(
        ask(
            request(
                "harsh-1",
                "continuity_check",
                {"scene_plan": DRAFT, "canon_context": CANON},
                contract="receipt_reply",
            )
        )
    )
    assert packet["output"].startswith("Continuity: FAIL")
    harsh = {"edited_draft": DRAFT, "canon": CANON}
    # A reply with no contract is not a verdict: left as the deterministic model writes it.
    assert json.loads(ask(request("harsh-1", "check_continuity", harsh, "p")))["pass"] is True
    # `verdict_fail` with `until_feedback`, on a provider of another name.
    model = OfflineModel(
        faults={"harsh-2": OfflineFault(fault="verdict_fail", until_feedback=True)},
        provider="chaos",
    )

    def check(prompt: str) -> bool:
        req = request("harsh-2", "check_continuity", harsh, prompt, contract="continuity_report")
        passed: bool = json.loads(asyncio.run(model.complete(req)).text)["pass"]
        return passed

    assert check("Check.") is False
    assert check(f"Check.\n\n## Also\n\n{FEEDBACK_MARK}>fixed</review_feedback>") is True


def test_a_user_defined_offline_provider_serves_faults_under_its_own_name(
    workspace: Path,
) -> None:
    write_models(
        workspace,
        {
            "providers": {"chaos": {"type": "offline", "faults": FAULTS, "max_retries": 1}},
            "roles": {"writer": {"provider": "chaos", "model": "flaky-1"}},
        },
    )
    client = AgentDirectory.for_workspace(workspace).client("chaos")
    assert isinstance(client, OfflineModel) and client.provider == "chaos"
    run, events = draft(workspace)
    attempts = [e for e in events if isinstance(e, ModelAttemptFailed)]
    assert [(a.provider, a.model, a.kind) for a in attempts] == [
        ("chaos", "flaky-1", "server_error")
    ] * 2
    assert run.status == RunStatus.FAILED
