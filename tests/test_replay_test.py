"""`replay-test`: a recorded run executed again against its own recorded replies."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from controlroom.domain.run_events import (
    AgentReplyRejected,
    AgentResponded,
    TokenUsage,
)
from controlroom.engine.context import Context
from controlroom.engine.replay_recording import Recording, recorded_replies
from controlroom.engine.replay_test import replay_test
from controlroom.engine.service import RunRequest, RunService
from controlroom.prompts.registry import BUNDLED_DIR
from tests.test_cli_e2e import cli as run_cli

CLI = str(Path(sys.executable).parent / "controlroom")
SCENE = Path("Story") / "Scenes" / "SCN-04-the-reckoning.md"


def record_main_job(service: RunService) -> str:
    run = asyncio.run(service.execute(service.start(RunRequest("creative_draft_scene", {}))))
    assert run.status == "done", run.error
    return run.id


def edit_editor_prompt(workspace: Path) -> str:
    """A workspace override of every variant of the editor's template, one line added."""
    layer = workspace / ".control-room" / "prompts" / "templates"
    layer.mkdir(parents=True, exist_ok=True)
    added = "Keep every sentence the author wrote in the first person."
    for template in (BUNDLED_DIR / "templates").glob("polish_draft.*.md"):
        (layer / template.name).write_text(template.read_text() + f"\n{added}\n")
    return added


def test_a_recorded_main_job_replays_to_the_same_slots_without_touching_its_source(
    ctx: Context, service: RunService, workspace: Path, tmp_path: Path
) -> None:
    run_id = record_main_job(service)
    before = [e.model_dump_json() for e in ctx.store.stream(run_id)]
    scene = (workspace / SCENE).read_bytes()

    report = asyncio.run(replay_test(ctx, run_id, tmp_path / "scratch"))

    assert report.passed, "\n".join(report.lines())
    assert (report.status, report.replay_status) == ("done", "done")
    assert report.answered == 5  # every agent step answered from the recording
    # The source run, its store and its workspace are as they were.
    assert [e.model_dump_json() for e in ctx.store.stream(run_id)] == before
    assert ctx.store.stream(report.replay_run_id) == []
    assert (workspace / SCENE).read_bytes() == scene
    # The replay wrote its own scene, into the scratch copy the run's file was taken from.
    assert (tmp_path / "scratch" / SCENE).read_bytes() == scene


def test_an_edited_prompt_template_fails_the_replay_naming_the_step_and_the_change(
    ctx: Context, service: RunService, workspace: Path, tmp_path: Path
) -> None:
    run_id = record_main_job(service)
    added = edit_editor_prompt(workspace)
    edited = Context.open(workspace)
    try:
        report = asyncio.run(replay_test(edited, run_id, tmp_path / "scratch"))
    finally:
        edited.close()

    assert not report.passed
    assert report.replay_status == "failed"
    [miss] = report.requests
    assert miss.step == "polish"
    recorded = next(
        e
        for e in ctx.store.stream(run_id)
        if isinstance(e, AgentResponded) and e.step_id == "polish"
    )
    assert miss.recorded_ref == recorded.request_ref
    assert miss.new_ref.startswith("sha256:") and miss.new_ref != miss.recorded_ref
    assert f"+{added}" in miss.diff.splitlines()
    assert "edited_draft" in {slot for slot, _, _ in report.slots}
    assert "step 'polish'" in "\n".join(report.lines())


def test_a_request_asked_again_gets_its_replies_in_order_and_a_cut_reply_is_not_given() -> None:
    usage = TokenUsage(input_tokens=3, output_tokens=4)

    def rejected(ref: str, reply: str, whole: bool = True) -> AgentReplyRejected:
        digest = None if whole else {"chars": 9999, "sha256": "0" * 64}
        return AgentReplyRejected.model_validate(
            {
                "originator_id": "run_x", "originator_version": 1, "prev_hash": "",
                "timestamp": "2026-01-01T00:00:00Z",
                "step_id": "s", "attempt": 1, "provider": "offline", "model": "m", "contract": "c",
                "errors": [], "reply": reply, "request_ref": ref, "usage": usage,
                "will_retry": True, "reply_digest": digest,
            }
        )  # fmt: skip

    recording = Recording(
        recorded_replies(
            [
                rejected("sha256:a", "one"),
                rejected("sha256:a", "two"),
                rejected("sha256:b", "x", False),
            ]
        )
    )
    answers = [recording.answer("sha256:a") for _ in range(3)]
    assert [a.text if a else None for a in answers] == ["one", "two", "two"]
    cut = recording.answer("sha256:b")
    assert cut is not None and cut.text is None
    assert recording.answer("sha256:unknown") is None


@pytest.mark.timeout(180)  # three CLI processes, on a machine that may be busy
def test_replay_test_on_the_command_line_passes_then_fails_once_a_prompt_changes(
    workspace: Path,
) -> None:
    run = subprocess.run(
        [CLI, "run", "creative_draft_scene", "-w", str(workspace), "--json"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    run_id = json.loads(run.stdout)["run_id"]

    def replay(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, "replay-test", run_id, "-w", str(workspace), *extra],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    passing = replay()
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert passing.stdout.startswith(f"PASS {run_id}")
    edit_editor_prompt(workspace)
    failing = replay("--json")
    assert failing.returncode == 1, failing.stderr
    report = json.loads(failing.stdout)
    assert report["passed"] is False
    [miss] = report["runs"][0]["request_mismatches"]
    assert miss["step"] == "polish" and miss["recorded_ref"] != miss["new_ref"]


@pytest.mark.long
@pytest.mark.timeout(600)
def test_a_run_of_every_bundled_recipe_replays_to_the_same_slots(workspace: Path) -> None:
    """Every bundled recipe that runs on the example without args (loops, per-run report
    paths and trees of child runs included) is recorded, then replayed from its own
    recording before the next one changes the workspace: each passes. The eval, which
    needs runs to fork, is replayed over a run recorded here."""
    from tests.bundled import RECIPES_DIR

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, "-w", str(workspace), timeout=120)

    replayed: dict[str, dict[str, object]] = {}
    for path in sorted(RECIPES_DIR.glob("*.json")):
        if path.name == "schema.json":
            continue
        ran = cli("run", path.stem, "-q", "--json")
        if ran.returncode == 64:  # needs args (a scene) or a capability: not run
            continue
        run_id = json.loads(ran.stdout)["run_id"]
        replay = cli("replay-test", run_id, "--json")
        replayed[path.stem] = json.loads(replay.stdout)["runs"][0]
        for scene in (workspace / "Story" / "Scenes").glob("SCN-04-*"):
            scene.unlink()  # a drafted scene: the next drafting recipe needs the slot free
    template = workspace / "polish.md"
    template.write_text(
        (BUNDLED_DIR / "templates" / "polish_draft.t3.md").read_text() + "Be brief.\n"
    )
    evaluated = cli(
        "eval", "--prompt-file", f"polish_draft={template}", "--recipe", "creative_draft_scene",
        "--last", "1", "-q", "--json",
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    eval_id = json.loads(evaluated.stdout)["run_id"]
    replay = cli("replay-test", eval_id, "--json")
    replayed["eval"] = json.loads(replay.stdout)["runs"][0]
    assert replayed["eval"]["answered_from_recording"] > 0
    assert {
        "creative_draft_scene", "loop_style_tune_up", "loop_post_mortem", "chapter_revision",
        "manuscript_revision", "eval",
    } <= set(replayed)  # fmt: skip
    tree = replayed["manuscript_revision"]["child_runs"]
    assert tree["recorded"] and tree["recorded"] == tree["replayed"]
    # A child run is replayed through its root, which replays the whole tree.
    root = json.loads(cli("show", replayed["manuscript_revision"]["run_id"], "--json").stdout)
    child = root["children"][0]["run_id"]
    refused = cli("replay-test", child)
    assert refused.returncode == 64, refused.stdout + refused.stderr
    assert "replay its root" in refused.stderr
    failing = {name: r for name, r in replayed.items() if not r["passed"]}
    assert not failing, json.dumps(failing, indent=1)[:4000]
