"""The escalation ladder through the CLI, offline (the offline provider's faults): every rung
in order, a person's answer, exit codes, and SIGKILL at every commit of a climbing run."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.flow_events import FlowDecided
from controlroom.domain.issue import IssueOpened
from controlroom.domain.ladder import LadderCallRecorded
from controlroom.domain.run_events import RunStarted, SlotWritten, StepCompleted, StepWaiting
from controlroom.engine.context import Context
from tests.conftest import DEMO_LEFTOVERS, EXAMPLE
from tests.test_cli_e2e import cli

pytestmark = pytest.mark.e2e

TASK = "creative_draft_scene"

#: A writer whose every model fails: each rung is climbed, and a person decides.
LADDER = {
    "providers": {
        "offline": {
            "type": "offline",
            "faults": {"flaky-1": {"fault": "http_500"}, "flaky-2": {"fault": "http_500"}},
        }
    },
    "roles": {
        "writer": {
            "provider": "offline",
            "model": "flaky-1",
            "escalation": [{"provider": "offline", "model": "flaky-2"}],
            "consult": [
                {"provider": "offline", "model": "offline-deterministic-1"},
                {"provider": "offline", "model": "flaky-1"},
            ],
            "synthesizer": {"provider": "offline", "model": "offline-deterministic-1"},
            "triage": {"provider": "offline", "model": "offline-deterministic-1"},
            "owner": "the author",
        }
    },
}


def workspace(tmp_path: Path, name: str, models: dict[str, Any] = LADDER) -> Path:
    target = tmp_path / name
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
    (target / ".control-room").mkdir(exist_ok=True)
    (target / ".control-room" / "models.json").write_text(json.dumps(models))
    return target


def events(ws: Path) -> list[Any]:
    ctx = Context.open(ws)
    try:
        return [p.event for p in ctx.store.read_log()]
    finally:
        ctx.close()


def rungs(evs: list[Any]) -> list[str]:
    return [str(e.rung["kind"]) for e in evs if isinstance(e, FlowDecided) and e.rung]


def test_a_failing_writer_climbs_every_rung_waits_exit_3_and_an_answer_finishes_it(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path, "ws")
    run = cli("run", TASK, "--arg", "scene_number=4", "-w", str(ws))
    assert run.returncode == 3, run.stderr
    assert "waiting for a person (the author)" in run.stdout
    evs = events(ws)
    assert rungs(evs) == ["escalate", "consult", "triage", "human"]
    (issue,) = [e for e in evs if isinstance(e, IssueOpened) and e.kind == "needs_human"]
    assert "rung escalate" in issue.detail and "triage: BLOCK" in issue.detail
    # every rung's calls were made once and recorded: two consults (one failed), a synthesis
    calls = [e.which for e in evs if isinstance(e, LadderCallRecorded)]
    assert calls == ["consult#1", "synthesis", "triage"]
    shown = cli("show", run.stdout.split(":")[0], "-w", str(ws))
    assert "ladder consult" in shown.stdout and "waiting for a person" in shown.stdout
    # its process ended on purpose: no word of a dead process or a worker to take it over
    listed = cli("runs", "-w", str(ws))
    for text in (shown.stdout, listed.stdout):
        assert "not advancing" not in text and "is gone" not in text, text
        assert f"issues answer {issue.originator_id}" in text, text

    refused = cli(
        "issues", "answer", issue.originator_id, "go", "--model", "offline:nope", "-w", str(ws)
    )
    assert refused.returncode == 64 and "nope" in refused.stderr
    answered = cli(
        "issues",
        "answer",
        issue.originator_id,
        "Draft it plainly.",
        "--model",
        "offline:offline-deterministic-1",
        "-w",
        str(ws),
    )
    assert answered.returncode == 0, answered.stderr + answered.stdout
    assert ": done" in answered.stdout
    evs = events(ws)
    assert rungs(evs)[-1] == "answered"
    assert (ws / "Story" / "Scenes" / "SCN-04-the-reckoning.md").exists()
    again = cli("issues", "answer", issue.originator_id, "twice", "-w", str(ws))
    assert again.returncode == 64 and "closed" in again.stderr
    # Replayed as it happened: the failed attempts fail again, the ladder climbs the same
    # rungs, and the person's recorded answer is given when the replay waits for it.
    (scene := ws / "Story" / "Scenes" / "SCN-04-the-reckoning.md").unlink()
    replayed = cli("replay-test", run.stdout.split(":")[0], "--json", "-w", str(ws))
    report = json.loads(replayed.stdout)["runs"][0]
    assert replayed.returncode == 0 and report["passed"], json.dumps(report)[:3000]
    assert not scene.exists()  # the replay ran in a scratch copy


def test_models_check_and_recipes_show_print_the_ladder(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "ws")
    check = cli("models", "check", "-w", str(ws))
    assert check.returncode == 0, check.stderr
    assert "ladder 1 escalate: offline:flaky-1 -> offline:flaky-2" in check.stdout
    assert "ladder 4 person: the author" in check.stdout
    shown = cli("recipes", "show", TASK, "-w", str(ws))
    assert shown.returncode == 0 and json.loads(shown.stdout)["recipe_id"] == TASK
    assert "draft:" in shown.stderr and "3 triage: offline:offline-deterministic-1" in shown.stderr


def test_a_ladder_naming_a_model_nobody_serves_is_refused_naming_it(tmp_path: Path) -> None:
    broken = json.loads(json.dumps(LADDER))
    broken["roles"]["writer"]["escalation"] = [{"provider": "offline", "model": "imaginary-9"}]
    ws = workspace(tmp_path, "ws", broken)
    run = cli("run", TASK, "--arg", "scene_number=4", "-w", str(ws))
    assert run.returncode == 64 and "imaginary-9" in run.stderr


@pytest.mark.timeout(600)
@pytest.mark.long
def test_a_kill_after_any_commit_of_a_climbing_run_resumes_to_the_same_rungs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference_ws = workspace(tmp_path, "reference")
    assert (
        cli("run", TASK, "--arg", "scene_number=4", "-w", str(reference_ws), "-q").returncode == 3
    )
    reference = events(reference_ws)
    want_rungs = rungs(reference)
    want_calls = sorted(
        (e.instance_id, e.which) for e in reference if isinstance(e, LadderCallRecorded)
    )
    want_slots = sorted((e.slot, e.sha256) for e in reference if isinstance(e, SlotWritten))
    points = 0
    problems: list[str] = []
    n = 0
    while True:
        n += 1
        ws = workspace(tmp_path, f"ws-{n}")
        killed = cli(
            "run",
            TASK,
            "--arg",
            "scene_number=4",
            "-w",
            str(ws),
            "-q",
            env={"CONTROLROOM_CRASH_AFTER_COMMIT": str(n)},
        )
        if killed.returncode != -9:
            assert killed.returncode == 3, killed.stderr
            break
        points += 1
        if any(isinstance(e, RunStarted) for e in events(ws)):
            resumed = cli("resume", "-w", str(ws), "-q")
            assert resumed.returncode in (0, 3), resumed.stderr
            assert "Traceback" not in resumed.stderr
        else:  # killed before the run was recorded: the user starts it again
            cli("run", TASK, "--arg", "scene_number=4", "-w", str(ws), "-q")
        got = events(ws)
        calls = [(e.instance_id, e.which) for e in got if isinstance(e, LadderCallRecorded)]
        completed = Counter(e.instance_id for e in got if isinstance(e, StepCompleted))
        if rungs(got) != want_rungs:
            problems.append(f"N={n}: rungs {rungs(got)}")
        if sorted(calls) != want_calls:
            problems.append(f"N={n}: ladder calls {calls}")
        if any(c > 1 for c in completed.values()):
            problems.append(f"N={n}: a step completed twice {completed}")
        if sorted((e.slot, e.sha256) for e in got if isinstance(e, SlotWritten)) != want_slots:
            problems.append(f"N={n}: slots differ")
        if not [e for e in got if isinstance(e, StepWaiting)]:
            problems.append(f"N={n}: not waiting for a person")
        if not [e for e in got if isinstance(e, IssueOpened) and e.kind == "needs_human"]:
            problems.append(f"N={n}: no needs_human issue")
        shutil.rmtree(ws)
    assert points > 5
    with capsys.disabled():
        print(f"\nladder crash matrix: {points} crash points, {len(problems)} problems")
    assert not problems, "\n".join(problems)


def test_against_a_real_openai_compatible_server_each_failure_climbs_one_rung(
    tmp_path: Path,
) -> None:
    """The same ladder against a server process on 127.0.0.1 speaking the OpenAI API: HTTP
    500s, then a reply cut at the token limit, then prose where the consult and the
    contract-bound triage answer: each reaches the ladder as a real model's would."""
    from tests.fake_llm import Script, openai_app, serve

    script = Script(
        ["ok"],
        by_model={"down": ["500"], "short": ["length"], "chatty": ["prose"]},
    )
    with serve(openai_app(script)) as base:
        lab = {
            "type": "openai",
            "base_url": f"{base}/v1",
            "api_key_env": "LAB_KEY",
            "max_retries": 1,
            "backoff_s": 0,
        }
        models = {
            "providers": {"lab": lab},
            "roles": {
                "writer": {
                    "provider": "lab",
                    "model": "down",
                    "params": {"max_tokens": 64},
                    "escalation": [{"provider": "lab", "model": "short"}],
                    "consult": [{"provider": "lab", "model": "sage"}],
                    "synthesizer": {"provider": "lab", "model": "sage"},
                    "triage": {"provider": "lab", "model": "chatty"},
                }
            },
        }
        ws = workspace(tmp_path, "ws", models)
        env = {"LAB_KEY": "sk-test"}
        run = cli("run", TASK, "--arg", "scene_number=4", "-w", str(ws), env=env)
    assert run.returncode == 3, run.stderr + run.stdout
    evs = events(ws)
    assert rungs(evs) == ["escalate", "consult", "triage", "human"]
    decided = [e for e in evs if isinstance(e, FlowDecided) and e.rung]
    assert decided[0].rung is not None and "server_error" in decided[0].rung["failure"]
    assert decided[1].rung is not None and "token limit" in decided[1].rung["failure"]
    # the triage's prose never met its contract: STOP_HOOK, and the ladder went to a person
    assert decided[3].rung is not None and decided[3].rung["failure_kind"] == "contract"
    assert script.served.get("down") and script.served.get("chatty")
