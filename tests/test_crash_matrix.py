"""The crash matrix: the process is killed (SIGKILL, by the store's fault-injection point
`CONTROLROOM_CRASH_AFTER_COMMIT`) after each durable commit N of a job in turn, resumed,
and compared with the same job run without interruption: the same outcome, slots, issues
and workspace files, and no step recorded twice. It prints its tally."""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
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
from tests.conftest import DEMO_LEFTOVERS, EXAMPLE
from tests.test_cli_e2e import cli

pytestmark = pytest.mark.e2e

#: The jobs: a run that completes (the main job, eleven steps, the last writing the new scene
#: file), and one whose DoD fails and opens an issue through a policy.
JOBS = {
    "draft": "Draft scene 4 from the outline",
    "failing_dod": "check consistency of the scenes against canon",
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


def outcome(workspace: Path) -> Outcome:
    ctx = Context.open(workspace)
    try:
        events = [p.event for p in ctx.store.read_log()]
    finally:
        ctx.close()
    completed = Counter(
        e.instance_id or f"{e.step_index}:{e.step_id}"
        for e in events
        if isinstance(e, StepCompleted)
    )
    files = tuple(
        sorted(
            (str(p.relative_to(workspace)), hashlib.sha256(p.read_bytes()).hexdigest())
            for p in workspace.rglob("*")
            if p.is_file() and ".control-room" not in p.parts
        )
    )
    return Outcome(
        ending=tuple(sorted({e.type_name for e in events if isinstance(e, TERMINAL_EVENTS)})),
        slots=tuple(sorted({(e.slot, e.sha256) for e in events if isinstance(e, SlotWritten)})),
        issues=tuple(sorted((e.kind, e.title) for e in events if isinstance(e, IssueOpened))),
        files=files,
        writes=tuple(
            (e.path, e.sha256_after, e.already_applied)
            for e in events
            if isinstance(e, FileWritten)
        ),
        duplicated_steps=tuple(sorted(k for k, n in completed.items() if n > 1)),
    )


def fresh(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
    return target


def runs_started(workspace: Path) -> int:
    ctx = Context.open(workspace)
    try:
        return sum(1 for p in ctx.store.read_log() if isinstance(p.event, RunStarted))
    finally:
        ctx.close()


@pytest.mark.timeout(900)
def test_a_kill_after_any_commit_resumes_to_the_uninterrupted_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    points = different = duplicated = 0
    report: list[str] = []
    for job, task in JOBS.items():
        reference_ws = fresh(tmp_path, f"{job}-reference")
        assert cli("run", task, "-w", str(reference_ws), "-q").returncode in (0, 1)
        reference = outcome(reference_ws)
        assert reference.ending and not reference.duplicated_steps
        if job == "draft":  # the new scene, written once, is among the files compared
            ((path, digest, applied),) = reference.writes
            assert not applied and (path, digest) in reference.files
        n = 0
        while True:
            n += 1
            workspace = fresh(tmp_path, f"{job}-{n}")
            ws = str(workspace)
            killed = cli(
                "run", task, "-w", ws, "-q", env={"CONTROLROOM_CRASH_AFTER_COMMIT": str(n)}
            )
            if killed.returncode != -9:
                break  # past the job's last commit: it ran to the end
            points += 1
            if runs_started(workspace):
                resumed = cli("resume", "-w", ws, "-q")
                assert resumed.returncode in (0, 1), (job, n, resumed.stderr)
                assert "Traceback" not in resumed.stderr
            else:  # killed before the run was recorded: the user starts it again
                assert cli("run", task, "-w", ws, "-q").returncode in (0, 1)
            cli("resume", "-w", ws, "-q")  # the recovery command lets the policies catch up
            got = outcome(workspace)
            if got.duplicated_steps:
                duplicated += 1
                report.append(f"{job} N={n}: duplicated {got.duplicated_steps}")
            if got != reference:
                different += 1
                report.append(f"{job} N={n}: {got} != {reference}")
            shutil.rmtree(workspace)
        assert n > 2, f"{job} was never killed"
    tally = f"crash matrix: {points} crash points, {different} different, {duplicated} duplicated"
    with capsys.disabled():
        print(f"\n{tally}")
    assert different == 0 and duplicated == 0, "\n".join([tally, *report])
