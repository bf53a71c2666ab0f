"""The event loop commands run on: uvloop by default (as `serve` has through uvicorn), the
standard loop on request, and a clear error for anything else."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from controlroom.engine import event_loop
from controlroom.engine.settings import SettingsError

CLI = str(Path(sys.executable).parent / "controlroom")


async def loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_uvloop_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(event_loop.LOOP_VAR, raising=False)
    assert event_loop.run(loop_module()).startswith("uvloop")
    assert event_loop.loop_name() == "uvloop"


def test_the_standard_loop_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(event_loop.LOOP_VAR, "asyncio")
    assert event_loop.run(loop_module()).startswith("asyncio")


def test_an_unknown_loop_is_a_settings_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(event_loop.LOOP_VAR, "trio")
    with pytest.raises(SettingsError, match="CONTROLROOM_EVENT_LOOP='trio'"):
        event_loop.run(loop_module())


def test_the_cli_names_a_bad_loop_setting_and_fails_cleanly(workspace: Path) -> None:
    done = subprocess.run(
        [CLI, "run", "prose review", "--workspace", str(workspace)],
        env={**os.environ, "CONTROLROOM_EVENT_LOOP": "trio"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "CONTROLROOM_EVENT_LOOP='trio' is not understood" in done.stderr
    assert "Traceback" not in done.stderr
