"""Store faults get clear answers: the CLI says what happened and what to do (exit 74), the
server answers 503 with Retry-After, and the interrupted runs resume once it is fixed."""

from __future__ import annotations

import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import httpx
import pytest

from controlroom.api.faults import EXIT_STORE_FAULT, store_fault
from controlroom.engine.settings import MIN_TOKEN_CHARS, Settings, SettingsError
from tests.live import live_server
from tests.test_cli_e2e import as_json, cli

pytestmark = pytest.mark.e2e


@contextmanager
def locked(database: Path) -> Iterator[None]:
    """Another process holding the store's write lock."""
    with closing(sqlite3.connect(database, isolation_level=None)) as conn:
        conn.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")


@contextmanager
def small_disk(tmp_path: Path, kib: int) -> Iterator[Path]:
    """A tmpfs of `kib` KiB (root in a container may mount one); skipped where it cannot."""
    mount = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip("cannot mount a small file system here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


def test_a_locked_store_is_a_503_with_retry_after(workspace: Path) -> None:
    ws = str(workspace)
    assert cli("run", "structural_canon", "-w", ws, "-q").returncode == 0
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=60) as client:
        with locked(workspace / ".control-room" / "events.sqlite"):
            response = client.post("/api/runs", json={"recipe_id": "structural_canon"})
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"].isdigit()
        assert response.json()["error"]["code"] == "locked"
        assert client.get("/api/runs").status_code == 200


def test_a_locked_store_is_a_clear_cli_error_with_exit_74(workspace: Path) -> None:
    ws = str(workspace)
    assert cli("run", "structural_canon", "-w", ws, "-q").returncode == 0
    with locked(workspace / ".control-room" / "events.sqlite"):
        result = cli("run", "structural_canon", "-w", ws, "-q")
    assert result.returncode == EXIT_STORE_FAULT, result.stderr
    assert "locked" in result.stderr and "Traceback" not in result.stderr


def test_a_full_disk_ends_with_a_message_and_a_resumable_run(
    workspace: Path, tmp_path: Path
) -> None:
    ws = str(workspace)
    with small_disk(tmp_path, 600) as disk:
        env = {"CONTROLROOM_STORE": f"sqlite:///{disk}/events.sqlite"}
        assert cli("run", "structural_canon", "-w", ws, "-q", env=env).returncode == 0
        free = int(subprocess.check_output(["df", "-k", "--output=avail", str(disk)]).split()[-1])
        filler = disk / "filler"
        filler.write_bytes(b"\0" * max(0, (free - 40) * 1024))
        results = [cli("run", "analytical_prose", "-w", ws, "-q", env=env) for _ in range(4)]
        failed = [r for r in results if r.returncode != 0]
        assert failed, "the disk never filled"
        for result in failed:
            assert result.returncode == EXIT_STORE_FAULT, result.stderr
            assert "full" in result.stderr and "Traceback" not in result.stderr
        filler.unlink()
        resumed = cli("resume", "-w", ws, "-q", env=env)
        assert resumed.returncode == 0, resumed.stderr
        statuses = {r["status"] for r in as_json(cli("runs", "-w", ws, "--json", env=env))}
        assert statuses == {"done"}


def test_only_store_errors_count_as_store_faults() -> None:
    assert store_fault(sqlite3.OperationalError("database or disk is full")) is not None
    assert store_fault(ConnectionRefusedError(111, "Connection refused")) is None
    assert store_fault(ValueError("no")) is None


@pytest.mark.parametrize("token", ["", "   ", "\t\n", "short-token"])
def test_an_empty_blank_or_short_token_is_a_configuration_error(
    workspace: Path, token: str
) -> None:
    with pytest.raises(SettingsError):
        Settings.from_env({"CONTROLROOM_API_TOKEN": token})
    result = cli(
        "serve", "--host", "0.0.0.0", "-w", str(workspace), env={"CONTROLROOM_API_TOKEN": token}
    )
    assert result.returncode == 64 and "CONTROLROOM_API_TOKEN" in result.stderr


def test_a_long_enough_token_is_accepted_as_given() -> None:
    token = " " + "t" * MIN_TOKEN_CHARS + " "
    assert Settings.from_env({"CONTROLROOM_API_TOKEN": token}).api_token == token.strip()


def test_store_faults_are_told_apart_by_their_codes_not_their_words(tmp_path: Path) -> None:
    from controlroom.eventstore.faults import fault_kind

    database = tmp_path / "x.sqlite"
    with closing(sqlite3.connect(database)) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
    with (
        locked(database),
        closing(sqlite3.connect(database, timeout=0)) as other,
        pytest.raises(sqlite3.OperationalError) as busy,
    ):
        other.execute("INSERT INTO t VALUES (1)")
    assert fault_kind(busy.value) == "locked"
    uri = f"file:{database}?mode=ro"
    with (
        closing(sqlite3.connect(uri, uri=True)) as reader,
        pytest.raises(sqlite3.OperationalError) as readonly,
    ):
        reader.execute("INSERT INTO t VALUES (1)")
    assert fault_kind(readonly.value) == "read_only"
    assert fault_kind(OSError(28, "No space left on device")) == "disk_full"
    assert fault_kind(FileNotFoundError(2, "gone")) is None  # a tool's, not the store's


def test_a_store_error_carries_its_kind_to_the_cli_and_the_server(workspace: Path) -> None:
    from controlroom.domain.errors import StoreUnavailableError
    from controlroom.domain.run import Run
    from controlroom.engine.context import Context
    from controlroom.engine.service import RunRequest, RunService

    ctx = Context.open(workspace)
    service = RunService(ctx)
    run = service.begin(RunRequest("structural_canon", {}), None)
    with (
        locked(workspace / ".control-room" / "events.sqlite"),
        pytest.raises(StoreUnavailableError) as raised,
    ):
        ctx.store.save(run)
    assert raised.value.kind == "locked"
    fault = store_fault(raised.value)
    assert fault is not None and fault.kind == "locked"
    assert ctx.store.load(Run, run.id) is None  # nothing recorded
    ctx.close()
