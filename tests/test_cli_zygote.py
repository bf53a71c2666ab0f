"""The tests' forked CLI (tests/cli_zygote.py) answers as a fresh start of `controlroom` does:
the same output and exit code, a kill read as the signal, an endless command stopped at its
timeout, and the caller's environment and working directory, not the server's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli_zygote import forked_cli
from tests.conftest import DEMO_LEFTOVERS, EXAMPLE
from tests.test_cli_e2e import CLI

pytestmark = pytest.mark.e2e


def fresh(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        check=False,
    )


def forked(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    runner = forked_cli()
    if runner is None:
        pytest.skip("CONTROLROOM_TEST_FORKED_CLI=0: every start is fresh")
    return runner.run(CLI, list(args), {**os.environ, **(env or {})}, timeout)


def test_output_and_exit_codes_are_a_fresh_starts(tmp_path: Path) -> None:
    for args in (("recipes", "list"), ("route", "foreshadowing audit"), ("show", "nope")):
        expected, got = fresh(*args, "-w", str(tmp_path)), forked(*args, "-w", str(tmp_path))
        assert (got.returncode, got.stdout, got.stderr) == (
            expected.returncode,
            expected.stdout,
            expected.stderr,
        ), args
    assert forked("no-such-command").returncode == fresh("no-such-command").returncode == 64


def test_a_kill_at_a_commit_reads_as_the_signal_and_the_env_is_the_callers(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
    killed = forked(
        "run",
        "check consistency of the scenes",
        "-w",
        str(workspace),
        env={"CONTROLROOM_CRASH_AFTER_COMMIT": "2"},
    )
    assert killed.returncode == -9, killed.stderr
    resumed = forked("resume", "-w", str(workspace), "-q")
    assert resumed.returncode in (0, 1), resumed.stderr  # 1: the DoD's planted problem
    assert forked("runs", "-w", str(workspace), "--json").stdout.count('"run_id"') == 1


def test_an_endless_command_is_stopped_at_its_timeout(tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        forked("serve", "-w", str(tmp_path), "--port", "0", "--no-execute", timeout=3)
