"""Workspaces as they are found on a writer's disk: a `node_modules` of thousands of files, a
link to nothing, a file of a hundred megabytes, a `.gitignore`, a FIFO. Discovery leaves out
what is not manuscript and says so, its receipt stays small, no such file fails a recipe,
and a long tool stops when its process is told to."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from controlroom.api.cli import main
from controlroom.domain.errors import ToolError
from controlroom.domain.run import Run, RunStatus
from controlroom.domain.run_events import ReceiptIssued
from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest, RunService
from controlroom.engine.settings import Settings, SettingsError
from controlroom.tools.base import ToolRegistry
from controlroom.tools.builtin.file_locator import MAX_LISTED
from controlroom.tools.layout import detect_layout
from controlroom.tools.stopping import ToolStoppedError, call_stoppable
from controlroom.tools.workspace import FileTooLargeError, Workspace

CHECK = "check consistency of the scenes"
CLI = str(Path(sys.executable).parent / "controlroom")
TOOLS = ToolRegistry.default(with_plugins=False)


@pytest.fixture
def novel(workspace: Path) -> Path:
    """The example novel without its planted contradiction: the consistency check passes."""
    scene = workspace / "Story" / "Scenes" / "SCN-02-the-ambush.md"
    scene.write_text(scene.read_text().replace("His green eyes", "His grey eyes"))
    return workspace


def run_task(workspace: Path, task: str = CHECK, **args: Any) -> tuple[Run, ReceiptIssued]:
    """The run of `task` to its end, and its first receipt (discovery's)."""
    ctx = Context.open(workspace)
    try:
        service = RunService(ctx)
        run = asyncio.run(service.execute(service.start(RunRequest(task, dict(args)))))
        receipts = [e for e in ctx.store.stream(run.id) if isinstance(e, ReceiptIssued)]
    finally:
        ctx.close()
    return run, receipts[0]


def receipt_bytes(receipt: ReceiptIssued) -> int:
    return len(receipt.stored_json().encode("utf-8"))


def fill(folder: Path, count: int, suffixes: tuple[str, ...] = (".md", ".txt", ".js")) -> None:
    for i in range(count):
        package = folder / f"pkg-{i // 100:03d}" / "lib"
        package.mkdir(parents=True, exist_ok=True)
        (package / f"file-{i % 100:02d}{suffixes[i % len(suffixes)]}").write_text("x\n")


def test_a_node_modules_of_thousands_of_files_leaves_the_receipt_as_it_was(
    novel: Path, tmp_path: Path
) -> None:
    plain_run, plain = run_task(novel)
    fill(novel / "node_modules", 3000)
    fill(novel / "Story" / "node_modules", 300)  # wherever it is
    run, receipt = run_task(novel)
    assert plain_run.status == run.status == RunStatus.DONE, run.error
    # The same receipt but for one line saying what was left out, whatever node_modules holds.
    assert receipt_bytes(receipt) <= receipt_bytes(plain) + 1000
    assert "node_modules" not in json.dumps(receipt.output["scenes"] + receipt.output["canon"])
    assert receipt.output["counts"]["other"] == 0
    left_out = [s["path"] for s in receipt.output["layout"]["skipped"]]
    assert left_out == ["Story/node_modules/", "node_modules/"]
    assert "left out: Story/node_modules/ (packages or build output)" in receipt.summary


def test_thousands_of_other_files_are_counted_in_the_receipt_not_listed(novel: Path) -> None:
    fill(novel / "Research", 3000, (".txt",))
    run, receipt = run_task(novel)
    assert run.status == RunStatus.DONE, run.error
    layout = receipt.output["layout"]
    assert len(layout["other"]) == MAX_LISTED and layout["other_total"] == 3000
    assert receipt.output["counts"]["other"] == 3000
    assert receipt_bytes(receipt) < 64 * 1024


def test_a_link_to_nothing_is_skipped_with_a_warning_and_fails_no_recipe(novel: Path) -> None:
    os.symlink("nowhere.md", novel / "Story" / "Scenes" / "gone.md")
    run, receipt = run_task(novel)
    assert run.status == RunStatus.DONE, run.error
    assert "Story/Scenes/gone.md" not in receipt.output["scenes_in_order"]
    assert (
        "! skipped 'Story/Scenes/gone.md': a link to 'nowhere.md', which does not exist"
        in receipt.summary
    )
    draft, _ = run_task(novel, "Draft scene 4 from the outline")
    assert draft.status == RunStatus.DONE, draft.error


def test_a_file_over_the_size_limit_is_skipped_unread_with_a_warning(
    novel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = novel / "Story" / "Scenes" / "SCN-05-the-log.md"
    with huge.open("wb") as file:
        file.truncate(6_000_000)  # sparse: nothing is written, and nothing must be read
    run, receipt = run_task(novel)
    assert run.status == RunStatus.DONE, run.error
    warning = (
        "skipped 'Story/Scenes/SCN-05-the-log.md': 6.0 MB, over the 5.0 MB limit per file "
        "(CONTROLROOM_MAX_FILE_BYTES)"
    )
    assert f"! {warning}" in receipt.summary
    assert warning in receipt.output["layout"]["warnings"]
    assert {"path": "Story/Scenes/SCN-05-the-log.md", "reason": "too_large"}.items() <= (
        receipt.output["layout"]["skipped"][0].items()
    )
    assert "Story/Scenes/SCN-05-the-log.md" not in receipt.output["scenes_in_order"]
    assert main(["workspace", "check", "-w", str(novel)]) == 0
    assert f"warning: {warning}" in capsys.readouterr().out


def test_the_size_limit_is_a_setting_and_a_file_named_over_it_is_refused_by_name(
    novel: Path,
) -> None:
    assert Settings.from_env({}).max_file_bytes == 5_000_000
    assert Settings.from_env({"CONTROLROOM_MAX_FILE_BYTES": "2000"}).max_file_bytes == 2000
    with pytest.raises(SettingsError, match="CONTROLROOM_MAX_FILE_BYTES"):
        Settings.from_env({"CONTROLROOM_MAX_FILE_BYTES": "lots"})
    small = Workspace(novel, max_file_bytes=950)
    layout = detect_layout(small)
    assert [u.path for u in layout.units] == ["Story/Scenes/SCN-01-the-arrival.md"]
    assert layout.warnings[0].startswith(
        "skipped 2 files over the size limit per file: 'Story/Scenes/SCN-02-the-ambush.md': "
        "1,020 bytes, over the 950 bytes limit per file (CONTROLROOM_MAX_FILE_BYTES); "
        "'Story/Scenes/SCN-03-the-archive.md'"
    )
    with pytest.raises(FileTooLargeError, match="CONTROLROOM_MAX_FILE_BYTES"):
        small.snapshot().read_text("Story/Scenes/SCN-02-the-ambush.md")


def test_the_workspace_gitignore_files_are_honoured(novel: Path) -> None:
    (novel / ".gitignore").write_text("# local only\nDrafts/\n!\n*.bak.md\n")
    (novel / "Drafts").mkdir()
    (novel / "Drafts" / "SCN-09-unfinished.md").write_text("# Scene 9\n\nNot yet.\n")
    (novel / "Story" / "Scenes" / "SCN-01-the-arrival.bak.md").write_text("# Old\n\nOld.\n")
    (novel / "Story" / ".gitignore").write_text("old-*.md\n!old-keep.md\n")
    (novel / "Story" / "old-notes.md").write_text("old\n")
    (novel / "Story" / "old-keep.md").write_text("kept\n")
    workspace = Workspace(novel)
    assert "Story/old-keep.md" in workspace.text_files
    assert {s.path: s.detail for s in workspace.skipped} == {
        "Drafts/": "ignored by .gitignore",
        "Story/Scenes/SCN-01-the-arrival.bak.md": "ignored by .gitignore",
        "Story/old-notes.md": "ignored by Story/.gitignore",
    }
    run, receipt = run_task(novel)
    assert run.status == RunStatus.DONE, run.error
    assert len(receipt.output["scenes_in_order"]) == 3
    assert "left out: Drafts/ (ignored by .gitignore)" in receipt.summary


def test_scenes_all_ignored_is_an_error_that_says_what_was_left_out(novel: Path) -> None:
    (novel / ".gitignore").write_text("/Story\n")
    with pytest.raises(ToolError, match=r"left out: Story/ \(ignored by \.gitignore\)"):
        TOOLS.execute("file_locator", {"require": ["units"]}, Workspace(novel))


def test_python_environments_and_build_folders_are_left_out(novel: Path) -> None:
    for folder in ("env", "build/html", "dist", "__pycache__"):
        (novel / folder).mkdir(parents=True)
        (novel / folder / "SCN-07-copy.md").write_text("# Scene 7\n\nA copy.\n")
    (novel / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    workspace = Workspace(novel)
    assert not [p for p in workspace.text_files if "SCN-07" in p]
    assert [s.path for s in workspace.skipped] == ["__pycache__/", "build/", "dist/", "env/"]


def test_a_fifo_among_the_scenes_is_skipped_with_a_warning(novel: Path) -> None:
    os.mkfifo(novel / "Story" / "Scenes" / "SCN-09-pipe.md")
    run, receipt = run_task(novel)
    assert run.status == RunStatus.DONE, run.error
    assert "! skipped 'Story/Scenes/SCN-09-pipe.md'" in receipt.summary


def test_a_stopped_tool_gives_up_at_its_next_read_or_listed_folder(novel: Path) -> None:
    stop = threading.Event()
    workspace = Workspace(novel)
    listed = call_stoppable(stop, lambda: workspace.snapshot().text_files)
    assert listed == workspace.text_files  # not stopped: a checkpoint changes nothing
    stop.set()
    with pytest.raises(ToolStoppedError):
        call_stoppable(stop, lambda: workspace.snapshot().text_files)
    with pytest.raises(ToolStoppedError):
        call_stoppable(stop, workspace.read_text, "Story/SCN-outline.md")
    with pytest.raises(ToolStoppedError):
        call_stoppable(stop, TOOLS.execute, "file_locator", {}, workspace.snapshot())
    assert workspace.read_text("Story/SCN-outline.md")  # outside a stoppable call: no stop


@pytest.mark.e2e
@pytest.mark.timeout(180)
def test_sigterm_during_a_long_tool_ends_the_process_at_once_and_resume_finishes(
    novel: Path,
) -> None:
    """Many medium files (90 MB) make the consistency check long (40 s to 2 minutes on a
    test machine); SIGTERM during it ends the process at once (it waited for the tool to
    finish before), exit 20, and `resume` performs the step again."""
    scene = (novel / "Story" / "Scenes" / "SCN-02-the-ambush.md").read_text().split("\n", 2)[2]
    notes = novel / "Notes"
    notes.mkdir()
    paths = []
    for i in range(300):
        copies = "\n".join(f"Day {i}-{k}. {scene}" for k in range(300_000 // len(scene)))
        (notes / f"long-{i:03d}.md").write_text(f"# Notes {i}\n\n{copies}")
        paths.append(f"Notes/long-{i:03d}.md")
    process = subprocess.Popen(
        [CLI, "run", CHECK, "-w", str(novel), "--arg", f"paths={json.dumps(paths)}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    seen = []
    for line in process.stderr:  # the progress lines: the check has started
        seen.append(line)
        if "check_consistency (consistency_checker)" in line:
            break
    time.sleep(1)
    assert process.poll() is None, "".join(seen)
    process.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    try:
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    waited = time.monotonic() - signalled
    assert process.returncode == 20, stderr
    assert "resumable" in stderr
    assert waited < 15, f"the process took {waited:.0f} s to stop after SIGTERM"

    for path in paths:  # a quick check this time
        (novel / path).write_text("# Notes\n\nKael rode on.\n")
    resumed = subprocess.run(
        [CLI, "resume", "-w", str(novel), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "done" in resumed.stdout
