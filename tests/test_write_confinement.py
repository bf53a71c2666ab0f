"""A hostile workspace cannot steer a write: no link, swapped folder or stray temporary file
takes a `write_file` step outside the workspace or into Control Room's own state, files keep
their modes, and a fault during the write fails the step instead of leaving the run running."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, ClassVar, Literal

import httpx
import pytest

from controlroom.api.app import create_app
from controlroom.domain.outcomes import StepOutcome, Waiting
from controlroom.domain.run import RunStatus, StepInstance
from controlroom.domain.run_events import FileWriteIntended, FileWritten, StepFailed
from controlroom.domain.steps import STEP_KINDS, StepSpec
from controlroom.engine import pinned_write
from controlroom.engine.context import Context
from controlroom.engine.performers import PERFORMERS, Execution
from controlroom.engine.pinned_write import PinnedFile
from controlroom.engine.service import RunRequest, RunService
from controlroom.tools.base import ToolArgs, ToolRegistry, ToolResult
from controlroom.tools.workspace import Workspace
from tests.conftest import write_override
from tests.live import serve_app
from tests.test_cli_e2e import cli
from tests.test_store_faults import small_disk
from tests.test_write_file import Crash, events, sha, start


def event_count(database: Path) -> int:
    with closing(sqlite3.connect(database)) as conn:
        (count,) = conn.execute("SELECT count(*) FROM stored_events").fetchone()
    return int(count)


# -- links ----------------------------------------------------------------------------------


@pytest.mark.e2e
def test_a_report_linked_to_the_event_log_never_replaces_the_log(workspace: Path) -> None:
    ws = str(workspace)
    assert cli("run", "structural_canon", "-w", ws, "-q").returncode == 0
    store = workspace / ".control-room" / "events.sqlite"
    before = event_count(store)
    reports = workspace / "control-room-reports"
    reports.mkdir(exist_ok=True)
    (reports / "corrections.md").unlink(missing_ok=True)
    (reports / "corrections.md").symlink_to("../.control-room/events.sqlite")

    result = cli("run", "check consistency of the scenes", "-w", ws, "-q")

    assert result.returncode == 1, result.stderr
    assert "link" in result.stderr, result.stderr
    assert (reports / "corrections.md").is_symlink()
    assert event_count(store) > before  # the log is whole, with the failed run in it
    listed = cli("runs", "-w", ws, "--json")
    assert listed.returncode == 0, listed.stderr
    assert {r["status"] for r in json.loads(listed.stdout)} == {"done", "failed"}


@pytest.mark.parametrize(
    ("make", "path"),
    [
        # a folder inside the workspace linked to the state folder
        (lambda ws: (ws / "Notes").symlink_to(".control-room"), "Notes/out.json"),
        # a folder linked out of the workspace
        (lambda ws: (ws / "Notes").symlink_to(ws.parent / "elsewhere"), "Notes/out.json"),
        # the file itself a link to a file outside
        (lambda ws: (ws / "out.json").symlink_to(ws.parent / "elsewhere" / "x"), "out.json"),
        # a link to a file inside (the workspace's own manuscript): not written through
        (lambda ws: (ws / "out.json").symlink_to("Story/SCN-outline.md"), "out.json"),
    ],
)
def test_no_link_is_followed_by_a_write(workspace: Path, make: Any, path: str) -> None:
    outside = workspace.parent / "elsewhere"
    outside.mkdir()
    (outside / "x").write_text("outside\n")
    make(workspace)
    outline = (workspace / "Story" / "SCN-outline.md").read_bytes()

    ctx, service, run = start(workspace, path, mode="replace")
    run = asyncio.run(service.execute(run))

    assert run.status == RunStatus.FAILED
    assert "link" in (run.error or ""), run.error
    assert not events(ctx, run.id, FileWritten)
    assert sorted(p.name for p in outside.iterdir()) == ["x"]
    assert (outside / "x").read_text() == "outside\n"
    assert not (workspace / ".control-room" / "out.json").exists()
    assert event_count(workspace / ".control-room" / "events.sqlite") > 0
    assert (workspace / "Story" / "SCN-outline.md").read_bytes() == outline
    ctx.close()


def test_the_event_store_inside_the_workspace_is_never_a_target(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTROLROOM_STORE", "sqlite:data/events.sqlite")
    ctx, service, run = start(workspace, "data/events.sqlite", mode="replace")
    before = event_count(workspace / "data" / "events.sqlite")
    run = asyncio.run(service.execute(run))
    assert run.status == RunStatus.FAILED and "event store" in (run.error or ""), run.error
    assert event_count(workspace / "data" / "events.sqlite") > before
    ctx.close()


def test_a_folder_swapped_for_an_outward_link_during_the_write_leaves_nothing_outside(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = workspace / "Notes"
    notes.mkdir()
    outside = workspace.parent / "elsewhere"
    outside.mkdir()
    moved = workspace.parent / "moved-away"
    real_replace = os.replace

    def swap_then_rename(*args: Any, **kwargs: Any) -> None:
        # Between the checks and the rename, the folder leaves the workspace and an outward
        # link takes its name (the check-then-write race).
        if not moved.exists():
            notes.rename(moved)
            notes.symlink_to(outside)
        real_replace(*args, **kwargs)

    monkeypatch.setattr(pinned_write.os, "replace", swap_then_rename)
    ctx, service, run = start(workspace, "Notes/out.json")
    run = asyncio.run(service.execute(run))
    monkeypatch.undo()

    assert run.status == RunStatus.FAILED and "moved" in (run.error or ""), run.error
    assert not events(ctx, run.id, FileWritten)
    assert list(outside.iterdir()) == []
    assert list(moved.iterdir()) == []  # taken back, temporary file included
    ctx.close()


# -- temporary files and modes -----------------------------------------------------------------


def test_a_write_killed_half_way_leaves_no_stray_file_after_resume(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, service, run = start(workspace, "Notes/out.json")

    def die(*args: Any) -> None:
        raise Crash

    monkeypatch.setattr(PinnedFile, "replace_with", die)
    with pytest.raises(Crash):
        asyncio.run(service.execute(run))
    monkeypatch.undo()
    # What a process killed while writing leaves: a part-written temporary file, named as
    # the step names it.
    (intent,) = events(ctx, run.id, FileWriteIntended)
    notes = workspace / "Notes"
    notes.mkdir(exist_ok=True)
    stray = notes / f".out.json.{intent.sha256_intended[:12]}.tmp"
    stray.write_text('{"half": ')

    resumed = asyncio.run(service.resume(run.id))

    assert resumed.status == RunStatus.DONE, resumed.error
    assert sorted(p.name for p in notes.iterdir()) == ["out.json"]
    assert sha((notes / "out.json").read_bytes()) == intent.sha256_intended
    ctx.close()


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def test_a_new_file_gets_the_umask_and_a_replaced_one_keeps_its_mode(workspace: Path) -> None:
    scene = workspace / "Story" / "Scenes" / "SCN-03-the-archive.md"
    scene.chmod(0o664)
    with umask(0o022):
        ctx, service, run = start(workspace, "Notes/new.json")
        assert asyncio.run(service.execute(run)).status == RunStatus.DONE
        ctx.close()
        ctx, service, run = start(workspace, "Story/Scenes/SCN-03-the-archive.md", "replace")
        run = asyncio.run(service.execute(run))
        assert run.status == RunStatus.DONE, run.error
        assert sha(scene.read_bytes()) == events(ctx, run.id, FileWritten)[0].sha256_after
        ctx.close()
    assert stat.S_IMODE((workspace / "Notes" / "new.json").stat().st_mode) == 0o644
    assert stat.S_IMODE(scene.stat().st_mode) == 0o664


# -- faults fail the step -------------------------------------------------------------------


def test_an_os_error_while_writing_fails_the_step_and_the_run_ends(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pinned_write.os, "fsync", disk_full)
    ctx, service, run = start(workspace, "Notes/out.json")
    run = asyncio.run(service.execute(run))
    monkeypatch.undo()
    assert run.status == RunStatus.FAILED
    (failed,) = events(ctx, run.id, StepFailed)
    assert "Notes/out.json" in failed.error and "disk is full" in failed.error
    assert not (workspace / "Notes" / "out.json").exists()
    assert [p.name for p in (workspace / "Notes").iterdir()] == []  # no temporary file
    ctx.close()


class Boom(StepSpec):
    kind: Literal["boom"] = "boom"
    error: str


async def perform_boom(execution: Execution, instance: StepInstance) -> StepOutcome | Waiting:
    step = instance.step
    assert isinstance(step, Boom)
    if step.error == "recursion":
        raise RecursionError("maximum recursion depth exceeded")
    raise FileNotFoundError(2, "No such file or directory", "gone/folder")


@pytest.mark.parametrize("error", ["recursion", "os"])
def test_a_step_raising_an_unexpected_exception_fails_instead_of_staying_running(
    workspace: Path, error: str
) -> None:
    STEP_KINDS.register(Boom)
    PERFORMERS.register("boom", perform_boom)
    try:
        recipe = {
            "recipe_id": "boom",
            "phase_b": [{"kind": "boom", "step_id": "b", "output_slot": "o", "error": error}],
        }
        write_override(workspace, "boom.json", json.dumps(recipe))
        ctx = Context.open(workspace)
        service = RunService(ctx)
        run = asyncio.run(service.execute(service.start(RunRequest("boom", {}))))
        assert run.status == RunStatus.FAILED
        (failed,) = events(ctx, run.id, StepFailed)
        assert failed.error_type == "StepCrashedError"
        assert ("RecursionError" if error == "recursion" else "FileNotFoundError") in failed.error
        again = asyncio.run(service.resume(run.id))  # nothing left to do, no crash
        assert again.status == RunStatus.FAILED
        ctx.close()
    finally:
        PERFORMERS.unregister("boom")
        STEP_KINDS.unregister("boom")


# -- the server takes a run up again after a store fault ----------------------------------------


class FillDisk(ToolArgs):
    pass


class FillDiskTool:
    """Fills the store's disk while it runs (once), so the step's commit meets a full disk."""

    name: ClassVar[str] = "fill_disk"
    description: ClassVar[str] = "fills the store's disk"
    args_model: ClassVar[type[ToolArgs]] = FillDisk
    filler: ClassVar[Path | None] = None
    filled: ClassVar[bool] = False

    def run(self, args: Any, workspace: Workspace) -> ToolResult:
        filler = FillDiskTool.filler
        if filler is not None and not FillDiskTool.filled:
            FillDiskTool.filled = True
            free = os.statvfs(filler.parent)
            with filler.open("wb") as out, pytest.raises(OSError):
                for _ in range(free.f_bavail * free.f_frsize // 4096 + 16):
                    out.write(b"\0" * 4096)
                    out.flush()
        return ToolResult(output={"filled": True}, summary="filled the disk")


def test_serve_takes_up_a_run_stopped_by_a_full_store_disk_once_it_is_freed(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with small_disk(tmp_path, 1024) as disk:
        monkeypatch.setenv("CONTROLROOM_STORE", f"sqlite:///{disk}/events.sqlite")
        recipe = {
            "recipe_id": "fill",
            "phase_a": [
                {"step_id": "fill", "tool": "fill_disk", "output_slot": "filled"},
                {"step_id": "again", "tool": "fill_disk", "output_slot": "again"},
            ],
        }
        write_override(workspace, "fill.json", json.dumps(recipe))
        tools = ToolRegistry.default(with_plugins=False).with_tools(FillDiskTool())
        ctx = Context.open(workspace, tools=tools)
        FillDiskTool.filler, FillDiskTool.filled = disk / "filler", False
        try:
            with (
                serve_app(create_app(ctx)) as base,
                httpx.Client(base_url=base, timeout=30) as client,
            ):
                started = client.post("/api/runs", json={"recipe_id": "fill"})
                assert started.status_code in (201, 202), started.text
                run_id = started.json()["run_id"]
                filler = FillDiskTool.filler
                for _ in range(200):  # the run's first step fills the disk
                    if filler.exists():
                        break
                    time.sleep(0.05)
                time.sleep(1.0)  # its commit meets the full disk
                filler.unlink()  # the operator frees the disk
                status = None
                for _ in range(160):
                    response = client.get(f"/api/runs/{run_id}")
                    status = response.json().get("status") if response.is_success else None
                    if status == "done":
                        break
                    time.sleep(0.25)
                assert status == "done"
        finally:
            FillDiskTool.filler = None
            ctx.close()


def test_a_new_file_takes_the_mode_of_the_files_beside_it(workspace: Path) -> None:
    """A writer's chapters are 0644; a draft written under a strict umask is too."""
    scenes = workspace / "Story" / "Scenes"
    for sibling in scenes.iterdir():
        sibling.chmod(0o644)
    with umask(0o077):
        ctx, service, run = start(workspace, "Story/Scenes/SCN-09-new.md")
        assert asyncio.run(service.execute(run)).status == RunStatus.DONE
        ctx.close()
    assert stat.S_IMODE((scenes / "SCN-09-new.md").stat().st_mode) == 0o644
