"""The verification (sentinel) loop of seed 004 §8: at most three cycles, "no improvement"
decided in code from the recorded fix lists, NEEDS_REFINEMENT (10) when it stops with
blocking findings left; each verification and fix committed as it returns."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.run import Run, RunStatus
from controlroom.domain.sentinel import (
    SentinelFixed,
    SentinelVerified,
    after_verification,
    fix_list_sha256,
)
from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest, RunService
from controlroom.models import offline_roles
from tests.conftest import REPO, write_override

TASK = "Draft scene 4 from the outline"


def verified(cycle: int, blocking: list[str]) -> SentinelVerified:
    return SentinelVerified(
        originator_id="run_x",
        originator_version=cycle,
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        prev_hash="",
        step_id="verify",
        instance_id="verify",
        cycle=cycle,
        agent_archetype="continuity",
        agent_id="continuity-001",
        provider="offline",
        model="offline",
        text_sha256="t",
        passed=not blocking,
        blocking=blocking,
        fix_list_sha256=fix_list_sha256(blocking),
        output="{}",
    )


def test_no_blocking_finding_ends_the_loop_done() -> None:
    assert after_verification(1, 3, [verified(1, [])]).action == "done"


def test_a_cycle_with_fewer_and_different_findings_goes_on() -> None:
    history = [verified(1, ["a", "b"]), verified(2, ["c"])]
    assert after_verification(2, 3, history).action == "fix"


def test_the_same_fix_list_again_is_no_improvement() -> None:
    verdict = after_verification(2, 3, [verified(1, ["a"]), verified(2, ["a"])])
    assert verdict.action == "stop" and "same fix list" in verdict.reason


def test_a_blocking_count_that_does_not_fall_is_no_improvement() -> None:
    verdict = after_verification(2, 3, [verified(1, ["a"]), verified(2, ["b"])])
    assert verdict.action == "stop" and "no improvement" in verdict.reason


def test_the_third_cycle_is_the_last() -> None:
    history = [verified(1, ["a", "b", "c"]), verified(2, ["a", "b"]), verified(3, ["a"])]
    verdict = after_verification(3, 3, history)
    assert verdict.action == "stop" and "after 3 cycles" in verdict.reason


def careless_writer(workspace: Path) -> None:
    """The writer's drafts contradict the canon (an eye colour), as a careless model's do."""
    folder = workspace / ".control-room"
    folder.mkdir(exist_ok=True)
    (folder / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "offline": {
                        "type": "offline",
                        "faults": {"careless-1": {"fault": "contradict_canon"}},
                    }
                },
                "roles": {"writer": {"provider": "offline", "model": "careless-1"}},
            }
        )
    )


def run_loop(workspace: Path) -> tuple[Run, list[Any]]:
    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        run = service.start(
            RunRequest("verified_draft_scene", {}, description=TASK, is_recipe_id=True)
        )
        run = asyncio.run(service.execute(run))
        return run, ctx.store.stream(run.id)
    finally:
        ctx.close()


def test_a_contradiction_is_fixed_and_the_second_verification_passes(workspace: Path) -> None:
    careless_writer(workspace)
    run, events = run_loop(workspace)
    checks = [e for e in events if isinstance(e, SentinelVerified)]
    fixes = [e for e in events if isinstance(e, SentinelFixed)]
    assert [c.passed for c in checks] == [False, True] and len(fixes) == 1
    assert any("eyes" in finding for finding in checks[0].blocking)
    assert (run.status, run.outcome) == (RunStatus.DONE, 0)
    verified_text = run.slot_texts["verified_draft"]
    assert verified_text == fixes[0].output and verified_text != run.slot_texts["edited_draft"]
    assert checks[1].text_sha256 != checks[0].text_sha256  # the fixed text was verified


def test_a_fix_that_changes_nothing_ends_needs_refinement(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    careless_writer(workspace)
    monkeypatch.setitem(
        offline_roles.HANDLERS, "apply_fix_list", lambda task, inputs: dict(inputs)["text"]
    )
    run, events = run_loop(workspace)
    checks = [e for e in events if isinstance(e, SentinelVerified)]
    assert len(checks) == 2 and checks[0].fix_list_sha256 == checks[1].fix_list_sha256
    assert (run.status, run.outcome) == (RunStatus.FAILED, 10)
    assert "no improvement" in (run.error or "")


def test_a_loop_killed_mid_way_resumes_without_asking_a_cycle_again(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    careless_writer(workspace)
    asked: list[str] = []
    check = offline_roles.HANDLERS["check_continuity"]
    fix = offline_roles.HANDLERS["apply_fix_list"]

    def counting_check(task: str, inputs: Any) -> str:
        asked.append("verify")
        return check(task, inputs)

    def dying_fix(task: str, inputs: Any) -> str:
        raise KeyboardInterrupt  # the process dies while the fixer works (as by SIGKILL)

    monkeypatch.setitem(offline_roles.HANDLERS, "check_continuity", counting_check)
    monkeypatch.setitem(offline_roles.HANDLERS, "apply_fix_list", dying_fix)
    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        run = service.start(
            RunRequest("verified_draft_scene", {}, description=TASK, is_recipe_id=True)
        )
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(service.execute(run))
        assert asked == ["verify"]  # cycle 1's verification is committed
        monkeypatch.setitem(offline_roles.HANDLERS, "apply_fix_list", fix)
        done = asyncio.run(service.resume(run.id))
        assert (done.status, done.outcome) == (RunStatus.DONE, 0)
        # Only cycle 2's verification was asked after the kill; cycle 1's was read back.
        assert asked == ["verify", "verify"]
        checks = [e for e in ctx.store.stream(run.id) if isinstance(e, SentinelVerified)]
        assert [c.cycle for c in checks] == [1, 2]
    finally:
        ctx.close()


def test_a_fixer_served_over_http_with_a_cut_stream_then_prose_still_mends_the_text(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixer on a server on 127.0.0.1 speaking the OpenAI API: its first stream stops
    short (retried), then it answers in plain prose, as fixers do; the text it answers is
    what the verifier reads next, and it passes."""
    from tests.fake_llm import REPLY, Script, openai_app, serve

    script = Script(["ok"], by_model={"fixer-1": ["cut", "prose"]})
    with serve(openai_app(script)) as base:
        lab = {"type": "openai", "base_url": f"{base}/v1", "api_key_env": "LAB_KEY",
               "max_retries": 1, "backoff_s": 0}  # fmt: skip
        models = {
            "providers": {
                "offline": {"type": "offline",
                            "faults": {"careless-1": {"fault": "contradict_canon"}}},
                "lab": lab,
            },
            "roles": {"writer": {"provider": "offline", "model": "careless-1"}},
        }  # fmt: skip
        step = {"agent_archetype": "fixer", "prompt_type": "apply_fix_list", "shown_as": "text"}
        recipe = json.loads((REPO / "recipes" / "verified_draft_scene.json").read_text())
        recipe["phase_b"][-1]["fixer"] = step
        write_override(workspace, "verified_draft_scene.json", json.dumps(recipe))
        models["roles"]["fixer"] = {"provider": "lab", "model": "fixer-1"}  # type: ignore[index]
        (workspace / ".control-room").mkdir(exist_ok=True)
        (workspace / ".control-room" / "models.json").write_text(json.dumps(models))
        monkeypatch.setenv("LAB_KEY", "k")
        run, events = run_loop(workspace)
    checks = [e for e in events if isinstance(e, SentinelVerified)]
    (fixed,) = [e for e in events if isinstance(e, SentinelFixed)]
    assert [c.passed for c in checks] == [False, True]
    assert fixed.output.strip() == REPLY and fixed.attempts == 2  # the cut one, then prose
    assert (run.status, run.outcome) == (RunStatus.DONE, 0)
