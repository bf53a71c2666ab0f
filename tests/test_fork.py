"""`fork`: a new run that copies a recorded run's steps before STEP and runs the rest live."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.canonical import sha256_text
from controlroom.domain.errors import BadInputError
from controlroom.domain.run_events import AgentResponded, RunForked, SlotWritten
from controlroom.engine.context import Context
from controlroom.engine.fork import ForkRequest, fork
from controlroom.engine.service import RunRequest, RunService
from controlroom.models.agents import AgentDirectory
from controlroom.models.port import ModelRequest, ModelResponse, TextSink
from controlroom.prompts.registry import BUNDLED_DIR
from tests.conftest import sent_bodies

CLI = str(Path(sys.executable).parent / "controlroom")
SCENE = Path("Story") / "Scenes" / "SCN-04-the-reckoning.md"
ADDED = "Keep every sentence the author wrote in the first person."


class CountingClient:
    """The offline model, each request's prompt type noted."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.provider, self.asked = inner, inner.provider, []

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = self.inner.request_body(request)
        return body

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        self.asked.append(request.prompt_type)
        response: ModelResponse = await self.inner.complete(request, on_text)
        return response


@pytest.fixture
def counting(ctx: Context) -> CountingClient:
    client = CountingClient(ctx.agents.client("offline"))
    ctx.agents = AgentDirectory(ctx.agents.config, {"offline": client})
    return client


def recorded_main_job(service: RunService, workspace: Path) -> str:
    run = asyncio.run(service.execute(service.start(RunRequest("creative_draft_scene", {}))))
    assert run.status == "done", run.error
    # The source wrote the scene: the fork's write must find the outline's slot free again.
    (workspace / SCENE).unlink()
    return run.id


def editor_prompt(tmp_path: Path) -> Path:
    path = tmp_path / "polish.md"
    path.write_text((BUNDLED_DIR / "templates" / "polish_draft.t3.md").read_text() + f"\n{ADDED}\n")
    return path


def slots(ctx: Context, run_id: str) -> dict[str, str]:
    return {e.slot: e.sha256 for e in ctx.store.stream(run_id) if isinstance(e, SlotWritten)}


def test_a_fork_copies_the_steps_before_its_step_and_runs_the_rest_live_with_the_new_prompt(
    ctx: Context, service: RunService, workspace: Path, tmp_path: Path, counting: CountingClient
) -> None:
    source = recorded_main_job(service, workspace)
    before = [e.model_dump_json() for e in ctx.store.stream(source)]
    counting.asked.clear()
    prompt = editor_prompt(tmp_path)

    forked = asyncio.run(fork(ctx, ForkRequest(source, "polish", {"polish_draft": prompt})))

    assert forked.status == "done", forked.error
    # No model call for the steps before `polish`: the brief and the draft were copied.
    assert "refine_brief" not in counting.asked and "draft_scene" not in counting.asked
    assert counting.asked[0] == "polish_draft"
    assert [e.model_dump_json() for e in ctx.store.stream(source)] == before
    events = ctx.store.stream(forked.id)
    [record] = [e for e in events if isinstance(e, RunForked)]
    assert (record.source_run_id, record.from_step) == (source, "polish")
    [change] = record.prompts
    assert change["sha256_after"] == sha256_text(prompt.read_text())
    assert change["sha256_after"] not in change["sha256_before"].values()
    assert forked.origin.kind == "fork" and forked.origin.source_run_id == source
    old, new = slots(ctx, source), slots(ctx, forked.id)
    assert {s: new[s] for s in ("scene_brief", "draft")} == {
        s: old[s] for s in ("scene_brief", "draft")
    }
    polish = next(e for e in events if isinstance(e, AgentResponded) and e.step_id == "polish")
    copied = next(e for e in events if isinstance(e, AgentResponded) and e.step_id == "draft")
    assert ADDED in json.dumps(
        RunService(ctx).recorded_request(forked.id, polish.request_ref or "")["body"]
    )
    assert copied.request_ref == RunService(ctx).recorded_request(source, "draft")["ref"]


def test_a_fork_from_a_step_the_run_never_started_is_refused_naming_its_steps(
    ctx: Context, service: RunService, workspace: Path
) -> None:
    source = recorded_main_job(service, workspace)
    with pytest.raises(BadInputError, match=r"never started a step 'nope' \(its steps: discover"):
        asyncio.run(fork(ctx, ForkRequest(source, "nope")))


@pytest.mark.timeout(180)  # five CLI processes, on a machine that may be busy
def test_fork_and_diff_on_the_command_line(workspace: Path, tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, *args, "-w", str(workspace), "--json"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    run = cli("run", "creative_draft_scene")
    assert run.returncode == 0, run.stderr
    source = json.loads(run.stdout)["run_id"]
    (workspace / SCENE).unlink()
    prompt = editor_prompt(tmp_path)
    forked = cli("fork", source, "--from", "polish", "--prompt-file", f"polish_draft={prompt}")
    assert forked.returncode == 0, forked.stderr
    fork_id = json.loads(forked.stdout)["run_id"]
    diff = cli("diff", source, fork_id)
    assert diff.returncode == 0, diff.stderr
    steps = {s["step"]: s for s in json.loads(diff.stdout)["steps"]}
    assert f"+{ADDED}" in steps["polish"]["request_diff"].splitlines()
    assert not steps["draft"]["changed"] and not steps["brief"]["changed"]
    shown = json.loads(cli("show", fork_id).stdout)
    assert shown["forked_from"] == {"run_id": source, "step": "polish"}
    lineage = json.loads(cli("show", source).stdout)["forks"]  # the source lists its fork
    assert [(f["run_id"], f["step"]) for f in lineage] == [(fork_id, "polish")]
    text = subprocess.run([CLI, "show", source, "-w", str(workspace)], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert f"forked as: {fork_id} from step 'polish'" in text.stdout


def test_a_fork_killed_before_its_live_steps_resumes_with_its_own_prompt(
    workspace: Path, tmp_path: Path
) -> None:
    """The fork's template is in its record: a `resume` in another process, after the
    fork command was killed, still runs the forked step with it."""

    def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, *args, "-w", str(workspace), "--json"],
            capture_output=True, text=True, timeout=60, check=False,
            env={**os.environ, **(env or {})},
        )  # fmt: skip

    run = cli("run", "creative_draft_scene")
    assert run.returncode == 0, run.stderr
    source = json.loads(run.stdout)["run_id"]
    (workspace / SCENE).unlink()
    prompt = editor_prompt(tmp_path)
    killed = cli(
        "fork", source, "--from", "polish", "--prompt-file", f"polish_draft={prompt}",
        env={"CONTROLROOM_CRASH_AFTER_COMMIT": "1"},
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    prompt.unlink()  # the file is gone: only the record can say what the template was
    resumed = cli("resume")
    assert resumed.returncode == 0, resumed.stderr
    ctx = Context.open(workspace)
    try:
        (record,) = [e for e in ctx.store.read_log() if isinstance(e.event, RunForked)]
        fork_id = record.event.originator_id
        asked = [e for e in ctx.store.stream(fork_id) if isinstance(e, AgentResponded)]
        polish = [e for e in asked if e.step_id == "polish"]
        assert polish, "the forked step never ran"
        bodies = sent_bodies(workspace, ctx.store.stream(fork_id))
    finally:
        ctx.close()
    assert ADDED in record.event.prompt_texts["polish_draft"]
    assert any(ADDED in json.dumps(body) for body in bodies.values())
