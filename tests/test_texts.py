"""Prompt texts stored once per store by their sha256 (domain/texts.py): requests refer to
them, `show --request` and the request's ref are unchanged, a second run stores none again."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from controlroom.domain.canonical import sha256_text
from controlroom.domain.run_events import ModelRequestRecorded
from controlroom.domain.texts import (
    MIN_STORED_CHARS,
    TextMissingError,
    join_body,
    referred_texts,
    split_body,
)
from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest, RunService
from tests.test_cli_e2e import cli

SYSTEM = "You are the Writer. " * 40
USER = "Draft scene 4. " * 40


def test_an_openai_body_keeps_its_user_text_and_refers_to_its_system_text() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": USER},
        ],
        "temperature": 0.2,
    }
    split, texts = split_body(body)
    assert split["messages"][0] == {"role": "system", "content_sha256": sha256_text(SYSTEM)}
    assert split["messages"][1] == {"role": "user", "content": USER}
    assert texts == {sha256_text(SYSTEM): SYSTEM}
    assert referred_texts(split) == [sha256_text(SYSTEM)]
    joined = join_body(split, texts)
    assert joined == body and list(joined) == list(body)  # the same keys, in the same order


def test_an_anthropic_body_refers_to_its_top_level_system_text() -> None:
    body = {"model": "m", "system": SYSTEM, "messages": [{"role": "user", "content": USER}]}
    split, texts = split_body(body)
    assert split == {
        "model": "m",
        "system_sha256": sha256_text(SYSTEM),
        "messages": [{"role": "user", "content": USER}],
    }
    assert join_body(split, texts) == body


def test_a_short_system_text_stays_inline() -> None:
    body = {"messages": [{"role": "system", "content": "x" * (MIN_STORED_CHARS - 1)}]}
    assert split_body(body) == (body, {})


def test_a_text_missing_or_altered_is_named() -> None:
    split, texts = split_body({"messages": [{"role": "system", "content": SYSTEM}]})
    (digest,) = texts
    with pytest.raises(TextMissingError, match=f"sha256:{digest} is missing"):
        join_body(split, {})
    with pytest.raises(TextMissingError, match="does not match its hash"):
        join_body(split, {digest: SYSTEM + "!"})


def run_twice(workspace: Path) -> tuple[list[str], Context]:
    ctx = Context.open(workspace)
    service = RunService(ctx)
    ids = []
    for _ in range(2):
        run = asyncio.run(service.execute(service.start(RunRequest("structural_canon", {}))))
        ids.append(run.id)
    return ids, ctx


def test_the_second_run_stores_no_text_and_its_requests_read_back_as_sent(
    workspace: Path,
) -> None:
    ids, ctx = run_twice(workspace)
    try:
        stored = [
            p.event for p in ctx.store.read_log() if p.event.originator_id.startswith("text_")
        ]
        requests = [
            [e for e in ctx.store.stream(run_id) if isinstance(e, ModelRequestRecorded)]
            for run_id in ids
        ]
        assert requests[0] and stored
        referred = {d for e in requests[0] for d in referred_texts(e.body)}
        assert referred == {e.sha256 for e in stored}  # each text once, by the first run
        assert [e.body for e in requests[0]] == [e.body for e in requests[1]]
        service = RunService(ctx)
        for event in requests[1]:
            body = service.request_body(event)
            assert "sha256:" + sha256_json_of(body) == event.ref
    finally:
        ctx.close()


def sha256_json_of(body: dict[str, object]) -> str:
    from controlroom.domain.canonical import sha256_json

    return sha256_json(body)


def text_count(workspace: Path) -> int:
    with closing(sqlite3.connect(workspace / ".control-room" / "events.sqlite")) as conn:
        (count,) = conn.execute(
            "SELECT COUNT(*) FROM stored_events WHERE originator_id LIKE 'text_%'"
        ).fetchone()
    return int(count)


def test_a_text_another_writer_stored_meanwhile_is_no_conflict(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids, ctx = run_twice(workspace)
    ctx.close()
    texts = text_count(workspace)
    other = Context.open(workspace)
    # As if this process looked before another stored them: its commit of the texts meets
    # them already there, and the run goes on.
    monkeypatch.setattr(other.store, "_holds_text", lambda digest: False)
    try:
        service = RunService(other)
        run = asyncio.run(service.execute(service.start(RunRequest("structural_canon", {}))))
        assert run.status.value == "done", run.error
        event = next(e for e in other.store.stream(run.id) if isinstance(e, ModelRequestRecorded))
        assert service.request_body(event) != event.body
    finally:
        other.close()
    assert text_count(workspace) == texts and ids


def test_show_request_prints_the_system_text_in_full(workspace: Path) -> None:
    ws = str(workspace)
    run = cli("run", "Draft scene 4", "-w", ws, "-q", "--json")
    run_id = run.stdout.split('"run_id": "')[1].split('"')[0]
    shown = cli("show", run_id, "--request", "draft", "-w", ws)
    assert shown.returncode == 0, shown.stderr
    assert "--- system ---\nYou are" in shown.stdout and "content_sha256" not in shown.stdout
