"""The crash matrix: the process is killed (SIGKILL, by the store's fault-injection point
`CONTROLROOM_CRASH_AFTER_COMMIT`) after each durable commit N of a job in turn, resumed,
and compared with the same job run without interruption: the same outcome, slots, issues
and workspace files, and no step recorded twice. It prints its tally."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from controlroom.domain.issue import IssueOpened
from controlroom.domain.run_events import (
    TERMINAL_EVENTS,
    FileWritten,
    RunStarted,
    SlotWritten,
    StepCompleted,
)
from controlroom.engine.context import Context
from tests.conftest import DEMO_LEFTOVERS, EXAMPLE, write_override
from tests.test_cli_e2e import cli

pytestmark = pytest.mark.e2e

#: The jobs: a run that completes (the main job, eleven steps, the last writing the new scene
#: file), one whose DoD fails and opens an issue through a policy, and a run tree (a step
#: that starts a child run, started and settled by policies): no child may start twice.
JOBS = {
    "draft": ("Draft scene 4 from the outline",),
    "failing_dod": ("check consistency of the scenes against canon",),
    "tree": ("tree_crash", "--arg", "scene_number=1"),
}
#: The tree job's recipe, a workspace recipe: one stage, a child run of a short recipe.
TREE_RECIPE = {
    "recipe_id": "tree_crash",
    "phase_b": [
        {
            "kind": "child_run",
            "step_id": "stage",
            "recipe": "analytical_scene_validate",
            "output_slot": "stage",
        }
    ],
    "dod": [{"check": "slot_not_null", "slot": "stage"}],
}


@dataclass(frozen=True)
class Outcome:
    ending: tuple[str, ...]
    slots: tuple[tuple[str, str], ...]
    issues: tuple[tuple[str, str], ...]
    files: tuple[tuple[str, str], ...]
    #: Every FileWritten: (path, hash after, whether it found the file already written).
    writes: tuple[tuple[str, str, bool], ...]
    duplicated_steps: tuple[str, ...]
    runs_started: int


def outcome(workspace: Path) -> Outcome:
    ctx = Context.open(workspace)
    try:
        events = [p.event for p in ctx.store.read_log()]
    finally:
        ctx.close()
    completed = Counter(
        f"{e.originator_id}:{e.instance_id or f'{e.step_index}:{e.step_id}'}"
        for e in events
        if isinstance(e, StepCompleted)
    )
    files = tuple(
        sorted(
            _file(str(p.relative_to(workspace)), p.read_bytes())
            for p in workspace.rglob("*")
            if p.is_file() and ".control-room" not in p.parts
        )
    )
    return Outcome(
        ending=tuple(sorted({e.type_name for e in events if isinstance(e, TERMINAL_EVENTS)})),
        slots=tuple(sorted({_slot(e) for e in events if isinstance(e, SlotWritten)})),
        issues=tuple(sorted((e.kind, e.title) for e in events if isinstance(e, IssueOpened))),
        files=files,
        writes=tuple(
            (_RUN_ID.sub(b"run_*", e.path.encode()).decode(), e.sha256_after, e.already_applied)
            for e in events
            if isinstance(e, FileWritten)
        ),
        duplicated_steps=tuple(sorted(k for k, n in completed.items() if n > 1)),
        runs_started=sum(1 for e in events if isinstance(e, RunStarted)),
    )


#: A run id: new in every workspace, so left out where it names a file or stands in one
#: (a report kept per run: control-room-reports/<kind>/<run id>.md).
_RUN_ID = re.compile(rb"run_[0-9a-f]{16,}")


def _file(path: str, data: bytes) -> tuple[str, str]:
    if path.startswith("control-room-reports/"):
        path = _RUN_ID.sub(b"run_*", path.encode()).decode()
        data = _RUN_ID.sub(b"run_*", data)
    return path, hashlib.sha256(data).hexdigest()


def _slot(e: SlotWritten) -> tuple[str, str]:
    """A slot and its hash; with run ids left out of its text (a child-run manifest names
    its children, a per-run report's path its run: ids are new in every workspace)."""
    if e.text and _RUN_ID.search(e.text.encode()):
        text = _RUN_ID.sub(b"run_*", e.text.encode())
        return e.slot, hashlib.sha256(text).hexdigest()
    return e.slot, e.sha256


def fresh(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
    write_override(target, "tree_crash.json", json.dumps(TREE_RECIPE))
    return target


def runs_started(workspace: Path) -> int:
    ctx = Context.open(workspace)
    try:
        return sum(1 for p in ctx.store.read_log() if isinstance(p.event, RunStarted))
    finally:
        ctx.close()


#: Crash points tried at once: each is its own workspace and processes, and the test is
#: otherwise one process after another, so the machine's second core does half of them.
AT_ONCE = 2


def crash_at(tmp_path: Path, job: str, task: tuple[str, ...], n: int) -> Outcome | None:
    """Kill the job after its commit `n`, recover as a user would, and read what it left;
    None when the job ended before commit `n` (nothing was killed)."""
    workspace = fresh(tmp_path, f"{job}-{n}")
    ws = str(workspace)
    killed = cli("run", *task, "-w", ws, "-q", env={"CONTROLROOM_CRASH_AFTER_COMMIT": str(n)})
    if killed.returncode != -9:
        shutil.rmtree(workspace)
        return None  # past the job's last commit: it ran to the end
    if runs_started(workspace):
        resumed = cli("resume", "-w", ws, "-q")
        assert resumed.returncode in (0, 1), (job, n, resumed.stderr)
        assert "Traceback" not in resumed.stderr
    else:  # killed before the run was recorded: the user starts it again
        assert cli("run", *task, "-w", ws, "-q").returncode in (0, 1)
    got = outcome(workspace)
    shutil.rmtree(workspace)
    return got


@pytest.mark.timeout(900)
@pytest.mark.long
def test_a_kill_after_any_commit_resumes_to_the_uninterrupted_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    points = different = duplicated = 0
    report: list[str] = []
    for job, task in JOBS.items():
        reference_ws = fresh(tmp_path, f"{job}-reference")
        assert cli("run", *task, "-w", str(reference_ws), "-q").returncode in (0, 1)
        reference = outcome(reference_ws)
        assert reference.ending and not reference.duplicated_steps
        if job == "draft":  # the new scene, written once, is among the files compared
            ((path, digest, applied),) = reference.writes
            assert not applied and (path, digest) in reference.files
        tried = 0
        with ThreadPoolExecutor(AT_ONCE) as pool:
            while True:
                batch = range(tried + 1, tried + 1 + AT_ONCE)
                tried += AT_ONCE
                at = [pool.submit(crash_at, tmp_path, job, task, n) for n in batch]
                results = [(n, future.result()) for n, future in zip(batch, at, strict=True)]
                for n, got in results:
                    if got is None:
                        continue
                    points += 1
                    if got.duplicated_steps:
                        duplicated += 1
                        report.append(f"{job} N={n}: duplicated {got.duplicated_steps}")
                    if got != reference:
                        different += 1
                        report.append(f"{job} N={n}: {got} != {reference}")
                if any(got is None for _, got in results):
                    break
        assert tried > 2, f"{job} was never killed"
    tally = f"crash matrix: {points} crash points, {different} different, {duplicated} duplicated"
    with capsys.disabled():
        print(f"\n{tally}")
    assert different == 0 and duplicated == 0, "\n".join([tally, *report])
