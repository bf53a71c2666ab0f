"""The CLI at its edges, as a new user meets them: closed pipes, out-of-range versions,
a broken override recipe, and a server port that is bad or taken."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.bundled import BUNDLED_RECIPES
from tests.conftest import write_override
from tests.live import live_server
from tests.test_cli_e2e import CLI, as_json, cli

pytestmark = pytest.mark.e2e


def cli_into_closed_pipe(*args: str) -> subprocess.CompletedProcess[bytes]:
    """Run a command whose stdout reader is already gone, as `| head` leaves it."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [CLI, *args], stdout=write_end, stderr=subprocess.PIPE, timeout=60, check=False
        )
    finally:
        os.close(write_end)


def test_a_reader_that_goes_away_early_stops_the_output_quietly(workspace: Path) -> None:
    assert cli("run", "structural_canon", "-w", str(workspace), "-q").returncode == 0
    for args in (["runs"], ["recipes", "list"], ["runs", "--json"]):
        result = cli_into_closed_pipe(*args, "-w", str(workspace))
        assert (result.returncode, result.stderr) == (141, b""), args


def test_replay_at_a_version_outside_the_run_is_a_range_error(workspace: Path) -> None:
    ws = str(workspace)
    run_id = as_json(cli("run", "structural_canon", "-w", ws, "-q", "--json"))["run_id"]
    versions = len(as_json(cli("events", run_id, "-w", ws, "--json")))
    for at in ("0", str(versions + 1), "999", "-1"):
        result = cli("replay", run_id, "--at", at, "-w", ws)
        assert result.returncode == 64, (at, result.stderr)
        assert f"--at must be a version from 1 to {versions}" in result.stderr
        assert "damage" not in result.stderr and result.stdout == ""
    at_last = cli("replay", run_id, "--at", str(versions), "-w", ws)
    assert at_last.returncode == 0 and as_json(at_last)["status"] == "done"


def test_a_broken_override_recipe_warns_reading_commands_and_refuses_runs(
    workspace: Path,
) -> None:
    ws = str(workspace)
    run_id = as_json(cli("run", "structural_canon", "-w", ws, "-q", "--json"))["run_id"]
    path = write_override(workspace, "broken.json", "{ not json")
    warning = "warning: skipped 1 broken recipe file(s)"
    reading = [
        ["runs"],
        ["show", run_id],
        ["events", run_id],
        ["issues"],
        ["replay", run_id],
        ["recipes", "list"],
        ["recipes", "show", "structural_canon"],
        ["route", "foreshadowing audit"],
        ["models", "check"],
    ]
    for args in reading:
        result = cli(*args, "-w", ws)
        assert result.returncode == 0, (args, result.stderr)
        assert warning in result.stderr and f"{path}: $: not valid JSON" in result.stderr, args
    refused = cli("run", "structural_canon", "-w", ws, "-q")
    assert refused.returncode == 64 and "error: invalid recipe" in refused.stderr
    validated = cli("recipes", "validate", "-w", ws)
    assert validated.returncode == 64 and str(path) in validated.stderr
    assert "warning" not in validated.stderr  # the problems are the answer, not a warning


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_serve_refuses_a_port_that_does_not_exist(workspace: Path, port: str) -> None:
    result = cli("serve", "--port", port, "-w", str(workspace))
    assert result.returncode == 64
    assert f"'{port}' is not a port: use 1 to 65535, or 0 for any free port" in result.stderr


def test_serve_on_a_port_in_use_says_so_and_exits_69(workspace: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli("serve", "--port", str(port), "-w", str(workspace))
    assert result.returncode == 69
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in result.stderr
    assert "--port 0" in result.stderr and "Traceback" not in result.stderr


def test_serve_on_port_zero_listens_on_a_free_port_and_names_it(workspace: Path) -> None:
    server = subprocess.Popen(
        [CLI, "serve", "--port", "0", "-w", str(workspace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        announced = server.stderr.readline()
        found = re.search(r"on http://127\.0\.0\.1:(\d+)$", announced.strip())
        assert found and int(found.group(1)) > 0, announced
        url = f"http://127.0.0.1:{found.group(1)}"
        deadline = time.monotonic() + 20
        while True:
            try:
                assert httpx.get(f"{url}/api/runs", timeout=5).json() == []
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the announced port never answered"
                time.sleep(0.05)
    finally:
        server.send_signal(signal.SIGTERM)
        _, stderr = server.communicate(timeout=20)
    assert server.returncode == 0 and "Traceback" not in stderr


def test_a_broken_override_recipe_leaves_the_server_reading_and_refuses_its_runs(
    workspace: Path,
) -> None:
    path = write_override(workspace, "broken.json", "{ not json")
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        assert client.get("/api/runs").json() == []
        assert len(client.get("/api/recipes").json()) == BUNDLED_RECIPES
        refused = client.post("/api/runs", json={"recipe_id": "structural_canon"})
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == "invalid_recipe"
        assert str(path) in refused.json()["error"]["message"]
