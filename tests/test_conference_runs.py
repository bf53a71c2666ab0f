"""A conference round is a run: it is executed by the one executor, and a process killed at
any commit of it is resumed by `controlroom resume` to the same transcript, without asking a
role that had replied again."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.conference import AgentCallRecorded, ConferenceRound
from controlroom.domain.run import Run
from controlroom.domain.run_events import RunStarted
from controlroom.engine.context import Context
from tests.test_cli_e2e import cli

pytestmark = pytest.mark.e2e

QUESTION = "Is Kael consistent with his canon card?"
ROLES = "continuity,critic,editor"


def rounds(workspace: Path) -> list[tuple[ConferenceRound, Run]]:
    """Every round of the workspace with the run it was a step of."""
    ctx = Context.open(workspace)
    try:
        found = []
        for item in ctx.store.read_log():
            event = item.event
            if isinstance(event, RunStarted) and event.recipe_id == "conference_round":
                run = ctx.store.load(Run, event.originator_id)
                assert run is not None
                conference = ctx.store.load(ConferenceRound, str(run.task.args["round_id"]))
                assert conference is not None
                found.append((conference, run))
        return found
    finally:
        ctx.close()


def role_calls(workspace: Path, round_id: str) -> Counter[str]:
    ctx = Context.open(workspace)
    try:
        return Counter(
            e.role
            for e in ctx.store.stream(round_id)
            if isinstance(e, AgentCallRecorded) and e.role != "chief"
        )
    finally:
        ctx.close()


def replies(conference: ConferenceRound) -> list[tuple[str, str, Any]]:
    """Each role's reply (receipt ids are new in every round)."""
    return [
        (
            role,
            type(conference.replies[role]).__name__,
            re.sub(r"rcpt_\w+", "rcpt_", conference.replies[role].text),
        )
        for role in conference.roles
    ]


def test_a_round_from_the_cli_is_a_run_with_its_origin(workspace: Path) -> None:
    done = cli("conference", QUESTION, "--roles", ROLES, "-w", str(workspace))
    assert done.returncode == 0, done.stderr
    ((conference, run),) = rounds(workspace)
    assert conference.status == "closed" and run.status.value == "done"
    assert run.task.description == QUESTION
    assert run.origin.kind == "user" and run.origin.via == "cli"
    slot = json.loads(run.slot_texts["round"])
    assert slot["round_id"] == conference.id and slot["status"] in ("collected", "closed")
    listed = json.loads(cli("runs", "--json", "-w", str(workspace)).stdout)
    assert [r["recipe_id"] for r in listed] == ["conference_round"]


@pytest.mark.timeout(300)
@pytest.mark.long
def test_a_round_killed_at_any_commit_resumes_to_the_same_transcript(
    workspace: Path, tmp_path: Path
) -> None:
    reference = tmp_path / "reference"
    shutil.copytree(workspace, reference)
    assert cli("conference", QUESTION, "--roles", ROLES, "-w", str(reference)).returncode == 0
    ((expected, _),) = rounds(reference)
    expected_calls = role_calls(reference, expected.id)

    killed_at = 0
    for n in range(1, 40):
        ws = tmp_path / f"crash-{n}"
        shutil.copytree(workspace, ws)
        env = {"CONTROLROOM_CRASH_AFTER_COMMIT": str(n)}
        first = cli("conference", QUESTION, "--roles", ROLES, "-w", str(ws), "--json", env=env)
        if first.returncode != -9:
            assert first.returncode == 0, first.stderr
            break  # the round needs fewer commits than n: every kill point was tried
        killed_at += 1
        resumed = cli("resume", "-w", str(ws), "-q")
        assert resumed.returncode == 0, (n, resumed.stderr)
        found = rounds(ws)
        if not found:  # killed at the run's first commit, before its round was recorded
            continue
        ((conference, run),) = found
        assert run.status.value == "done", (n, run.error)
        assert conference.status == "closed", n
        assert replies(conference) == replies(expected), n
        # A role whose reply was recorded before the kill was not asked again.
        assert role_calls(ws, conference.id) == expected_calls, n
    assert killed_at >= 5  # the round has several commits, each one tried
