"""What a verify proves, and to whom. A checkpoint carries its own public key, so someone
who can rewrite the store can re-sign a checkpoint of their rewrite: only a key the verifier
keeps (a public key file, a fingerprint) refuses it. And the hash chain is computable by
anyone, so a `RunCompleted` forged onto a failed run verifies: a verify names the events
no checkpoint covers instead of calling them proven."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlroom.eventstore.store import EventStore
from controlroom.projections import checkpoints
from tests.live import live_server
from tests.test_checkpoints import DB, sealed
from tests.test_cli_e2e import as_json, cli

pytestmark = pytest.mark.e2e
NOT_COVERED = "not covered by any checkpoint"


@pytest.fixture(autouse=True)
def no_configured_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever key the developer's shell holds, these tests say which key is trusted."""
    for var in (checkpoints.KEY_VAR, checkpoints.KEY_FILE_VAR):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def failed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A workspace with one run whose Definition of Done fails on purpose."""
    from tests.conftest import DEMO_LEFTOVERS, EXAMPLE

    workspace = tmp_path_factory.mktemp("failed") / "novel"
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
    result = cli("run", "consistency check", "-w", str(workspace), "-q", "--json")
    run = as_json(result)
    assert result.returncode == 1 and run["status"] == "failed", result.stderr
    yield workspace, run["run_id"]


@pytest.fixture
def keyed(failed: tuple[Path, str], tmp_path: Path) -> dict[str, Any]:
    """A copy of the workspace, its signing key, the public half a verifier keeps, its
    fingerprint and a genuine checkpoint, taken before anyone tampers."""
    source, run_id = failed
    workspace = tmp_path / "novel"
    shutil.copytree(source, workspace)
    key, public, genuine = tmp_path / "audit.key", tmp_path / "audit.pub", tmp_path / "cp.json"
    assert cli("audit", "keygen", "--out", str(key)).returncode == 0
    signer = {checkpoints.KEY_FILE_VAR: str(key)}
    exported = cli("audit", "export-key", "--out", str(public), "--json", env=signer)
    assert exported.returncode == 0 and public.is_file(), exported.stderr
    taken = cli("audit", "checkpoint", "--out", str(genuine), "-w", str(workspace), env=signer)
    assert taken.returncode == 0, taken.stderr
    fingerprint = as_json(exported)["key_fingerprint"]
    assert fingerprint in taken.stderr  # the checkpoint says which key signed it
    return {
        "ws": str(workspace),
        "run_id": run_id,
        "public": str(public),
        "fingerprint": fingerprint,
        "checkpoint": str(genuine),
    }


def rewrite_and_re_sign(workspace: Path, out: Path) -> None:
    """The forger's move: change the store, then sign a checkpoint of it with a key of
    their own (the checkpoint format lets anyone do both)."""
    with closing(sqlite3.connect(workspace / DB)) as conn, conn:
        conn.execute(
            "DELETE FROM stored_events WHERE rowid = (SELECT MAX(rowid) FROM stored_events)"
        )
    forger = checkpoints.load_key(checkpoints.generate_key())
    checkpoints.write(checkpoints.take(EventStore.for_workspace(workspace), forger), out)


def forge_completion(workspace: Path, run_id: str) -> int:
    """Append a `RunCompleted` to the run, chained to its last event: no secret needed.
    Its version comes back."""
    with closing(sqlite3.connect(workspace / DB)) as conn, conn:
        version, state = conn.execute(
            "SELECT originator_version, state FROM stored_events WHERE originator_id = ? "
            "ORDER BY originator_version DESC LIMIT 1",
            (run_id,),
        ).fetchone()
        last = json.loads(state)
        forged = {
            "originator_id": run_id,
            "originator_version": version + 1,
            "timestamp": last["timestamp"],
            "prev_hash": last["event_hash"],
        }
        conn.execute(
            "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
            "VALUES (?, ?, 'RunCompleted', ?)",
            (run_id, version + 1, sealed("RunCompleted", forged)),
        )
    return int(version) + 1


def test_a_re_signed_forgery_is_refused_against_the_key_the_verifier_keeps(
    keyed: dict[str, Any], tmp_path: Path
) -> None:
    forged = tmp_path / "forged.json"
    rewrite_and_re_sign(Path(keyed["ws"]), forged)
    verify = ("audit", "verify", "--checkpoint", str(forged), "-w", keyed["ws"])
    by_file = cli(*verify, "--public-key", keyed["public"])
    assert by_file.returncode == 1, by_file.stderr
    assert "signed by another key than the one you trust" in by_file.stderr
    assert "not signed by the key you trust" in by_file.stderr
    by_print = cli(*verify, "--key-fingerprint", keyed["fingerprint"], "--json")
    assert by_print.returncode == 1 and not as_json(by_print)["proven"], by_print.stderr
    # The genuine checkpoint, against the same key, is what shows the rewrite.
    genuine = cli("audit", "verify", "--checkpoint", keyed["checkpoint"], "-w", keyed["ws"])
    assert genuine.returncode == 1 and "removed" in genuine.stderr


def test_without_a_trusted_key_verify_says_it_proved_nothing(
    keyed: dict[str, Any], tmp_path: Path
) -> None:
    forged = tmp_path / "forged.json"
    rewrite_and_re_sign(Path(keyed["ws"]), forged)
    result = cli("audit", "verify", "--checkpoint", str(forged), "-w", keyed["ws"], "--json")
    assert result.returncode == 0, result.stderr  # consistent, and that is all
    assert "consistent, not proven" in result.stderr and "verified:" not in result.stderr
    assert "checked only against the key the checkpoint carries" in result.stderr
    report = as_json(result)
    assert report["ok"] and not report["proven"] and report["trusted_key"] is None


def test_a_public_key_installed_in_the_user_layer_is_trusted(
    keyed: dict[str, Any], tmp_path: Path
) -> None:
    home = tmp_path / "verifier-home"
    home.mkdir()
    shutil.copy(keyed["public"], home / "checkpoint-key.pub")
    env = {"CONTROLROOM_HOME": str(home)}
    forged = tmp_path / "forged.json"
    rewrite_and_re_sign(Path(keyed["ws"]), forged)
    refused = cli("audit", "verify", "--checkpoint", str(forged), "-w", keyed["ws"], env=env)
    assert refused.returncode == 1 and "checkpoint-key.pub" in refused.stderr, refused.stderr


def test_keys_that_cannot_be_trusted_are_bad_input(keyed: dict[str, Any], tmp_path: Path) -> None:
    verify = ("audit", "verify", "--checkpoint", keyed["checkpoint"], "-w", keyed["ws"])
    private = tmp_path / "audit.key"  # the signing key itself is not a public key file
    refused = cli(*verify, "--public-key", str(private))
    assert refused.returncode == 64 and "not a PEM public key" in refused.stderr
    garbled = cli(*verify, "--key-fingerprint", "SHA256:nope")
    assert garbled.returncode == 64 and "is not a key fingerprint" in garbled.stderr
    other = checkpoints.fingerprint(checkpoints.load_key(checkpoints.generate_key()).public_key())
    torn = cli(*verify, "--public-key", keyed["public"], "--key-fingerprint", other)
    assert torn.returncode == 64 and "give the key you trust once" in torn.stderr
    loose = cli(
        "replay", keyed["run_id"], "--verify", "--public-key", keyed["public"], "-w", keyed["ws"]
    )
    assert loose.returncode == 64 and "go with --checkpoint" in loose.stderr


def test_a_forged_completion_of_a_failed_run_is_named_as_not_covered(
    keyed: dict[str, Any],
) -> None:
    workspace, run_id = Path(keyed["ws"]), keyed["run_id"]
    forge_completion(workspace, run_id)
    replayed = cli("replay", run_id, "--verify", "-w", keyed["ws"])
    # The chain holds and the run shows done: exactly why the output must say so.
    assert replayed.returncode == 0 and as_json(replayed)["status"] == "done"
    assert "hash chain intact" in replayed.stderr
    assert NOT_COVERED in replayed.stderr, replayed.stderr
    assert "is RunCompleted: the run's outcome is not proven" in replayed.stderr
    with live_server(workspace) as base, httpx.Client(base_url=base, timeout=30) as client:
        verdict = client.get(f"/api/runs/{run_id}/verify").json()
    assert verdict["verified"] is True
    tail = verdict["not_covered"]
    assert tail["last_type"] == "RunCompleted" and tail["outcome_unproven"] is True
    assert NOT_COVERED in tail["message"]


def test_a_checkpoint_taken_before_the_forgery_names_the_uncovered_tail(
    keyed: dict[str, Any],
) -> None:
    workspace, run_id = Path(keyed["ws"]), keyed["run_id"]
    version = forge_completion(workspace, run_id)
    trust = ("--checkpoint", keyed["checkpoint"], "--public-key", keyed["public"])
    replayed = cli("replay", run_id, "--verify", *trust, "-w", keyed["ws"])
    assert replayed.returncode == 0, replayed.stderr
    assert "against a checkpoint signed by the key you trust" in replayed.stderr
    position = checkpoints.read(Path(keyed["checkpoint"]))["position"]
    named = f"1 event (v{version}, RunCompleted) after position {position} is not covered"
    assert named in replayed.stderr, replayed.stderr
    audited = cli("audit", "verify", *trust, "-w", keyed["ws"], "--json")
    report = as_json(audited)
    assert audited.returncode == 0 and report["proven"], audited.stderr
    tail = report["appended"][run_id]
    assert (tail["count"], tail["last_type"]) == (1, "RunCompleted")
    assert tail["first_position"] > position
