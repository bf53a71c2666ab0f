"""Anchored tamper evidence: against a signed checkpoint taken before the tampering, every
one of sixteen ways to alter the store is detected, including the ones the hash chain
alone cannot see (a run cut short, a rewrite with every hash recomputed, swapped global
positions, a forged event appended with a valid chain)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from controlroom.domain.events import parse_topic, stored_content_hash
from controlroom.eventstore.store import EventStore
from controlroom.projections import checkpoints
from controlroom.projections.audit import verify as verify_chain
from tests.test_cli_e2e import as_json, cli

pytestmark = pytest.mark.e2e
KEY = checkpoints.generate_key()
TRUSTED = checkpoints.TrustedKey.of(checkpoints.load_key(KEY).public_key(), "the test's key")
DB = Path(".control-room") / "events.sqlite"
Tamper = Callable[[sqlite3.Connection, list[str]], None]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[str]]]:
    """Two finished runs and a third, all checkpointed; each test tampers with a copy."""
    from tests.conftest import DEMO_LEFTOVERS, EXAMPLE

    root = tmp_path_factory.mktemp("pristine")
    workspace = root / "novel"
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(*DEMO_LEFTOVERS))
    ws = str(workspace)
    runs = [
        as_json(cli("run", recipe, "-w", ws, "-q", "--json"))["run_id"]
        for recipe in ("structural_canon", "structural_canon", "analytical_prose")
    ]
    yield workspace, runs


@pytest.fixture
def store_copy(
    pristine: tuple[Path, list[str]], tmp_path: Path
) -> Iterator[tuple[Path, list[str], dict[str, Any]]]:
    source, runs = pristine
    workspace = tmp_path / "novel"
    shutil.copytree(source, workspace)
    store = EventStore.for_workspace(workspace)
    checkpoint = checkpoints.take(store, checkpoints.load_key(KEY))
    yield workspace, runs, checkpoint


def rows(conn: sqlite3.Connection, run_id: str) -> list[tuple[int, int, str, bytes]]:
    return conn.execute(
        "SELECT rowid, originator_version, topic, state FROM stored_events "
        "WHERE originator_id = ? ORDER BY originator_version",
        (run_id,),
    ).fetchall()


def sealed(topic: str, data: dict[str, Any]) -> bytes:
    """The event's JSON with its own hash recomputed exactly as sealing does."""
    data = {**data, "event_hash": "0" * 64}
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    digest = stored_content_hash(parse_topic(topic)[0], body)
    assert digest is not None
    return json.dumps(
        {**data, "event_hash": digest}, separators=(",", ":"), ensure_ascii=False
    ).encode()


def rechain(
    conn: sqlite3.Connection, run_id: str, edit: Callable[[int, dict[str, Any]], None]
) -> None:
    """Apply `edit` to each event's data, then recompute every hash and link: a rewrite
    the per-event chain cannot tell from the original."""
    previous = "0" * 64
    for rowid, version, topic, state in rows(conn, run_id):
        data = json.loads(state)
        edit(version, data)
        data["originator_version"] = version
        data["prev_hash"] = previous
        new_state = sealed(topic, data)
        previous = json.loads(new_state)["event_hash"]
        conn.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", (new_state, rowid))


def edit_payload(conn: sqlite3.Connection, runs: list[str]) -> None:
    rowid, _, _, state = rows(conn, runs[0])[0]
    changed = state.replace(b"structural_canon", b"structural_forged", 1)
    conn.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", (changed, rowid))


def edit_and_rehash_one(conn: sqlite3.Connection, runs: list[str]) -> None:
    rowid, _, topic, state = rows(conn, runs[0])[0]
    data = json.loads(state)
    data["task"]["description"] = "forged"
    conn.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", (sealed(topic, data), rowid))


def edit_and_rechain(conn: sqlite3.Connection, runs: list[str]) -> None:
    def edit(version: int, data: dict[str, Any]) -> None:
        if version == 1:
            data["task"]["description"] = "forged, every hash after it recomputed"

    rechain(conn, runs[0], edit)


def delete_middle(conn: sqlite3.Connection, runs: list[str]) -> None:
    conn.execute("DELETE FROM stored_events WHERE rowid = ?", (rows(conn, runs[0])[3][0],))


def delete_last(conn: sqlite3.Connection, runs: list[str]) -> None:
    conn.execute("DELETE FROM stored_events WHERE rowid = ?", (rows(conn, runs[0])[-1][0],))


def delete_last_three(conn: sqlite3.Connection, runs: list[str]) -> None:
    for row in rows(conn, runs[1])[-3:]:
        conn.execute("DELETE FROM stored_events WHERE rowid = ?", (row[0],))


def delete_whole_run(conn: sqlite3.Connection, runs: list[str]) -> None:
    conn.execute("DELETE FROM stored_events WHERE originator_id = ?", (runs[1],))


def swap_versions(conn: sqlite3.Connection, runs: list[str]) -> None:
    a, b = rows(conn, runs[0])[2], rows(conn, runs[0])[3]
    conn.execute(
        "UPDATE stored_events SET topic = ?, state = ? WHERE rowid = ?", (b[2], b[3], a[0])
    )
    conn.execute(
        "UPDATE stored_events SET topic = ?, state = ? WHERE rowid = ?", (a[2], a[3], b[0])
    )


def swap_global_positions(conn: sqlite3.Connection, runs: list[str]) -> None:
    first, second = rows(conn, runs[0])[-1][0], rows(conn, runs[1])[0][0]
    conn.execute("UPDATE stored_events SET rowid = -1 WHERE rowid = ?", (first,))
    conn.execute("UPDATE stored_events SET rowid = ? WHERE rowid = ?", (first, second))
    conn.execute("UPDATE stored_events SET rowid = ? WHERE rowid = -1", (second,))


def retime_and_rechain(conn: sqlite3.Connection, runs: list[str]) -> None:
    def edit(version: int, data: dict[str, Any]) -> None:
        if version == 2:
            data["timestamp"] = "2020-01-01T00:00:00Z"

    rechain(conn, runs[0], edit)


def change_topic(conn: sqlite3.Connection, runs: list[str]) -> None:
    rowid = rows(conn, runs[0])[-1][0]
    conn.execute("UPDATE stored_events SET topic = 'RunFailed' WHERE rowid = ?", (rowid,))


def insert_forged_and_rechain(conn: sqlite3.Connection, runs: list[str]) -> None:
    run = runs[0]
    existing = rows(conn, run)
    conn.execute(
        "UPDATE stored_events SET originator_version = -originator_version WHERE originator_id = ?",
        (run,),
    )
    conn.execute(
        "UPDATE stored_events SET originator_version = -originator_version + "
        "(CASE WHEN -originator_version >= 3 THEN 1 ELSE 0 END) WHERE originator_id = ?",
        (run,),
    )
    template = json.loads(existing[-2][3])  # any event shape will do for a forgery
    conn.execute(
        "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
        "VALUES (?, 3, ?, ?)",
        (run, existing[-2][2], json.dumps(template).encode()),
    )

    def keep(version: int, data: dict[str, Any]) -> None:
        pass

    rechain(conn, run, keep)


def append_forged_to_finished(conn: sqlite3.Connection, runs: list[str]) -> None:
    run = runs[2]
    last = rows(conn, run)[-1]
    data = json.loads(last[3])
    data.update(originator_version=last[1] + 1, prev_hash=data["event_hash"])
    conn.execute(
        "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
        "VALUES (?, ?, ?, ?)",
        (run, last[1] + 1, last[2], sealed(last[2], data)),
    )


def truncate_log(conn: sqlite3.Connection, runs: list[str]) -> None:
    conn.execute(
        "DELETE FROM stored_events WHERE rowid > (SELECT MAX(rowid) - 5 FROM stored_events)"
    )


def move_to_another_run(conn: sqlite3.Connection, runs: list[str]) -> None:
    rowid = rows(conn, runs[1])[-1][0]
    last = rows(conn, runs[0])[-1][1]
    conn.execute(
        "UPDATE stored_events SET originator_id = ?, originator_version = ? WHERE rowid = ?",
        (runs[0], last + 1, rowid),
    )


def move_run_to_new_positions(conn: sqlite3.Connection, runs: list[str]) -> None:
    """Same content, same chain, re-inserted at the end of the log (new positions)."""
    moved = rows(conn, runs[0])
    conn.execute("DELETE FROM stored_events WHERE originator_id = ?", (runs[0],))
    conn.executemany(
        "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
        "VALUES (?, ?, ?, ?)",
        [(runs[0], version, topic, state) for _, version, topic, state in moved],
    )


CASES: dict[str, Tamper] = {
    "edit_payload": edit_payload,
    "edit_and_rehash_one": edit_and_rehash_one,
    "edit_and_rechain": edit_and_rechain,
    "delete_middle": delete_middle,
    "delete_last": delete_last,
    "delete_last_three": delete_last_three,
    "delete_whole_run": delete_whole_run,
    "swap_versions": swap_versions,
    "swap_global_positions": swap_global_positions,
    "retime_and_rechain": retime_and_rechain,
    "change_topic": change_topic,
    "insert_forged_and_rechain": insert_forged_and_rechain,
    "append_forged_to_finished": append_forged_to_finished,
    "truncate_log": truncate_log,
    "move_to_another_run": move_to_another_run,
    "move_run_to_new_positions": move_run_to_new_positions,
}


def tamper(workspace: Path, runs: list[str], how: Tamper) -> None:
    with closing(sqlite3.connect(workspace / DB)) as conn, conn:
        how(conn, runs)


@pytest.mark.parametrize("case", list(CASES))
def test_each_tampering_is_detected_against_a_checkpoint_taken_before_it(
    store_copy: tuple[Path, list[str], dict[str, Any]], case: str
) -> None:
    workspace, runs, checkpoint = store_copy
    tamper(workspace, runs, CASES[case])
    store = EventStore.for_workspace(workspace)
    trusted = TRUSTED
    report = checkpoints.verify(store, checkpoint, trusted=trusted)
    assert not report.ok, (case, report)
    # And per run, as `replay RUN --verify --checkpoint` reads it: some run shows it.
    per_run = [checkpoints.verify(store, checkpoint, trusted=trusted, run_id=r) for r in runs]
    assert any(not r.ok for r in per_run), case


def test_an_untouched_store_verifies_and_reports_what_was_appended_since(
    store_copy: tuple[Path, list[str], dict[str, Any]],
) -> None:
    workspace, _, checkpoint = store_copy
    ws = str(workspace)
    assert cli("run", "structural_canon", "-w", ws, "-q").returncode == 0
    store = EventStore.for_workspace(workspace)
    report = checkpoints.verify(store, checkpoint, trusted=TRUSTED)
    assert report.ok and report.proven, report.problems
    assert sum(t.count for t in report.appended.values()) > 0 and len(report.appended) >= 1


def test_the_hash_chain_alone_misses_what_the_checkpoint_catches(
    store_copy: tuple[Path, list[str], dict[str, Any]],
) -> None:
    workspace, runs, _ = store_copy
    tamper(workspace, runs, delete_last)
    tamper(workspace, runs, edit_and_rechain)
    assert verify_chain(EventStore.for_workspace(workspace), runs[0]) == []


def test_a_checkpoint_altered_or_signed_by_another_key_is_refused(
    store_copy: tuple[Path, list[str], dict[str, Any]],
) -> None:
    workspace, _, checkpoint = store_copy
    store = EventStore.for_workspace(workspace)
    trusted = TRUSTED
    altered = {**checkpoint, "size": checkpoint["size"] - 1}
    assert any("altered" in p for p in checkpoints.verify(store, altered, trusted=trusted).problems)
    other = checkpoints.take(store, checkpoints.load_key(checkpoints.generate_key()))
    problems = checkpoints.verify(store, other, trusted=trusted).problems
    assert any("another key" in p for p in problems)


def test_the_cli_takes_a_checkpoint_and_proves_a_run_against_it(
    store_copy: tuple[Path, list[str], dict[str, Any]], tmp_path: Path
) -> None:
    workspace, runs, _ = store_copy
    ws, key_file, out = str(workspace), tmp_path / "audit.key", tmp_path / "cp.json"
    assert cli("audit", "keygen", "--out", str(key_file)).returncode == 0
    env = {"CONTROLROOM_CHECKPOINT_KEY_FILE": str(key_file)}
    taken = cli("audit", "checkpoint", "--out", str(out), "-w", ws, env=env)
    assert taken.returncode == 0 and out.is_file(), taken.stderr
    plain = cli("replay", runs[0], "--verify", "-w", ws, env=env)
    assert plain.returncode == 0 and "without a checkpoint this cannot prove" in plain.stderr
    ok = cli("audit", "verify", "--checkpoint", str(out), "-w", ws, env=env)
    assert ok.returncode == 0 and "verified" in ok.stderr, ok.stderr
    tamper(workspace, runs, delete_last)
    bad = cli("audit", "verify", "--checkpoint", str(out), "-w", ws, env=env)
    assert bad.returncode == 1 and "removed" in bad.stderr, bad.stderr
    replayed = cli("replay", runs[0], "--verify", "--checkpoint", str(out), "-w", ws, env=env)
    assert replayed.returncode == 1 and "tampered" in replayed.stderr, replayed.stderr
    untouched = cli("replay", runs[2], "--verify", "--checkpoint", str(out), "-w", ws, env=env)
    assert untouched.returncode == 0, untouched.stderr
    missing_key = cli("audit", "checkpoint", "-w", ws)
    assert missing_key.returncode == 64 and "CONTROLROOM_CHECKPOINT_KEY" in missing_key.stderr
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{}")
    refused = cli("audit", "verify", "--checkpoint", str(garbage), "-w", ws)
    assert refused.returncode == 64 and "not a controlroom-checkpoint/1 file" in refused.stderr


def test_the_server_takes_checkpoints_when_the_log_grows(
    store_copy: tuple[Path, list[str], dict[str, Any]],
) -> None:
    from controlroom.api.checkpointer import Checkpointer
    from controlroom.engine.context import Context
    from controlroom.engine.settings import Settings

    workspace, _, _ = store_copy
    settings = Settings.from_env(
        {"CONTROLROOM_CHECKPOINT_KEY": KEY, "CONTROLROOM_CHECKPOINT_EVERY_S": "60"}
    )
    ctx = Context.open(workspace, settings=settings)
    try:
        checkpointer = Checkpointer.from_settings(ctx)
        assert checkpointer is not None
        written = checkpointer.take_if_grown()
        assert written is not None and written.parent.name == "checkpoints"
        assert checkpointer.take_if_grown() is None  # nothing new: no new checkpoint
        report = checkpoints.verify(ctx.store, checkpoints.read(written))
        assert report.ok and report.notes  # unpinned: it says so
    finally:
        ctx.close()
