"""Two workspaces sharing one store keep to their own runs: `resume`, `retry` and workers
never continue another workspace's run in this one (it would read this manuscript and
write its files here), unless told the workspace moved (`--here`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controlroom.engine.context import Context
from controlroom.engine.settings import Settings
from controlroom.engine.worker import Worker

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "controlroom")


def _novel(at: Path) -> Path:
    shutil.copytree(
        REPO / "examples" / "novel",
        at,
        ignore=shutil.ignore_patterns(".control-room", "SCN-04-*"),
    )
    return at


@pytest.mark.timeout(180)
def test_a_run_is_continued_only_in_the_workspace_it_started_in(tmp_path: Path) -> None:
    started, other = _novel(tmp_path / "started"), _novel(tmp_path / "other")
    env = {**os.environ, "CONTROLROOM_STORE": f"sqlite:{tmp_path / 'shared.sqlite'}"}

    def cli(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, *args, "-w", str(ws)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )

    queued = cli(started, "run", "Draft scene 4 from the outline", "--queue")
    assert queued.returncode == 0, queued.stderr
    run_id = next(w for w in queued.stdout.split() if w.startswith("run_")).rstrip(":")
    refused = cli(other, "resume", run_id)
    assert refused.returncode == 64, refused.stderr
    assert f"belongs to the workspace {started.resolve()}" in refused.stderr
    assert "--here" in refused.stderr
    every = cli(other, "resume")
    assert every.returncode == 0, every.stderr
    assert f"left 1 unfinished run(s) of other workspaces sharing this store to them: {run_id}" in (
        every.stderr
    )
    assert not list((other / "Story" / "Scenes").glob("SCN-04-*"))  # nothing written here
    # a worker of the other workspace does not take it; one of its own workspace would
    for ws, wanted in ((other, []), (started, [run_id])):
        ctx = Context.open(ws, settings=Settings.from_env(env))
        try:
            worker = Worker(ctx, lambda: [run_id], followers=None)  # type: ignore[arg-type]
            assert worker.claimable() == wanted
        finally:
            ctx.close()
    # told the workspace moved here, it goes on and writes here
    moved = cli(other, "resume", run_id, "--here", "-q")
    assert moved.returncode == 0, moved.stderr
    assert list((other / "Story" / "Scenes").glob("SCN-04-*"))
    assert not list((started / "Story" / "Scenes").glob("SCN-04-*"))
