"""Prompt texts stored once per store by their sha256 (domain/texts.py): requests refer to
them, `show --request` and the request's ref are unchanged, a second run stores none again."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from eventsourcing.persistence import StoredEvent

from controlroom.domain.canonical import sha256_json, sha256_text
from controlroom.domain.errors import PayloadTooLargeError
from controlroom.domain.run import Run, ToolOutcome
from controlroom.domain.run_events import ModelRequestRecorded, ReceiptIssued, TaskSpec
from controlroom.domain.texts import (
    MIN_STORED_CHARS,
    TextMissingError,
    join_body,
    referred_texts,
    split_body,
)
from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore.store import Damaged
from tests.test_cli_e2e import cli

SYSTEM = "You are the Writer. " * 40
USER = "Draft scene 4. " * 40


def test_an_openai_body_refers_to_its_long_texts_and_keeps_short_ones() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": USER},
            {"role": "assistant", "content": "Short."},
            {"role": "user", "content": [{"type": "text", "text": USER}]},
        ],
        "temperature": 0.2,
    }
    split, texts = split_body(body)
    assert split["messages"][0] == {"role": "system", "content_sha256": sha256_text(SYSTEM)}
    assert split["messages"][1] == {"role": "user", "content_sha256": sha256_text(USER)}
    assert split["messages"][2:] == body["messages"][2:]  # short, and structured: inline
    assert texts == {sha256_text(SYSTEM): SYSTEM, sha256_text(USER): USER}
    assert referred_texts(split) == [sha256_text(SYSTEM), sha256_text(USER)]
    joined = join_body(split, texts)
    assert joined == body and list(joined) == list(body)  # the same keys, in the same order


def test_an_anthropic_body_refers_to_its_top_level_system_text() -> None:
    body = {"model": "m", "system": SYSTEM, "messages": [{"role": "user", "content": "Go."}]}
    split, texts = split_body(body)
    assert split == {
        "model": "m",
        "system_sha256": sha256_text(SYSTEM),
        "messages": [{"role": "user", "content": "Go."}],
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
        receipts = {d for e in ctx.store.stream(ids[0]) for d in e.detached_texts().values()}
        assert receipts and referred  # each text once, by the first run:
        assert referred | receipts == {e.sha256 for e in stored}
        assert [e.body for e in requests[0]] == [e.body for e in requests[1]]
        service = RunService(ctx)
        for event in requests[1]:
            body = service.request_body(event)
            assert "sha256:" + sha256_json_of(body) == event.ref
        # asked by its ref, a request names the step that sent it, as asked by the step
        by_step = service.recorded_request(ids[1], "update")
        assert service.recorded_request(ids[1], by_step["ref"]) == by_step
        assert by_step["step_id"] == "update"
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


# -- receipts' outputs ---------------------------------------------------------------------


def stored_receipts(workspace: Path, run_id: str) -> list[dict[str, object]]:
    with closing(sqlite3.connect(workspace / ".control-room" / "events.sqlite")) as conn:
        rows = conn.execute(
            "SELECT state FROM stored_events WHERE originator_id = ? AND topic = 'ReceiptIssued'"
            " ORDER BY originator_version",
            (run_id,),
        ).fetchall()
    return [json.loads(state) for (state,) in rows]


def test_a_receipts_long_output_is_stored_once_and_read_back_whole(workspace: Path) -> None:
    ids, ctx = run_twice(workspace)
    try:
        first, second = (
            [e for e in ctx.store.stream(i) if isinstance(e, ReceiptIssued)] for i in ids
        )
        assert first and [e.output for e in first] == [e.output for e in second]
        for event in first:
            assert event.output_sha256 == sha256_json(event.output)  # whole again
        # As stored: the output named by its sha256, which the event's hash covers.
        detached = [s for s in stored_receipts(workspace, ids[1]) if s["output_text_sha256"]]
        assert detached and all(s["output"] is None for s in detached)
        # The run rebuilt from its events reads its slots whole: what later steps see.
        run = ctx.store.load(Run, ids[1])
        assert run is not None
        for event in second:
            assert event.output in run.slot_values.values()
    finally:
        ctx.close()
    ctx = Context.open(workspace)  # a new process: texts read from the store, not memory
    try:
        assert [e.output for e in ctx.store.stream(ids[1]) if isinstance(e, ReceiptIssued)] == [
            e.output for e in first
        ]
    finally:
        ctx.close()
    slot = cli("slot", ids[1], "canon_context", "-w", str(workspace))
    assert slot.returncode == 0, slot.stderr
    assert json.loads(slot.stdout) == next(e.output for e in first if e.step_id == "check_canon")


def test_a_receipt_whose_output_text_is_gone_is_reported_damaged_by_name(
    workspace: Path,
) -> None:
    ids, ctx = run_twice(workspace)
    digest = next(
        e.output_text_sha256
        for e in ctx.store.stream(ids[0])
        if isinstance(e, ReceiptIssued) and e.output_text_sha256
    )
    ctx.close()
    with closing(sqlite3.connect(workspace / ".control-room" / "events.sqlite")) as conn:
        conn.execute("DELETE FROM stored_events WHERE originator_id = ?", (f"text_{digest}",))
        conn.commit()
    ctx = Context.open(workspace)
    try:
        damaged = [r for r in ctx.store.stream_records(ids[0]) if isinstance(r, Damaged)]
        assert damaged and f"sha256:{digest} is missing from the store" in damaged[0].reason
    finally:
        ctx.close()


def test_a_short_output_and_a_receipt_recorded_before_stay_inline(workspace: Path) -> None:
    from tests.test_run_aggregate import AT, RECIPE, TOOL

    short = Run.start("run_short", AT, RECIPE, TaskSpec(description="d"), None, "s", "t")
    short.complete_tool_step(AT, TOOL)  # {"paths": ["a.md"]}: shorter than a reference
    (receipt,) = (e for e in short.collect_events() if isinstance(e, ReceiptIssued))
    assert receipt.output == TOOL.output and receipt.output_text_sha256 is None
    assert not short.take_texts()
    ids, ctx = run_twice(workspace)
    ctx.close()
    # A receipt as releases before this stored it: the output inline, no flag.
    old = dict(stored_receipts(workspace, ids[0])[0])
    output_sha = old["output_sha256"]
    old.pop("output_text_sha256")
    ctx = Context.open(workspace)
    try:
        old["output"] = next(
            e.output for e in ctx.store.stream(ids[0]) if isinstance(e, ReceiptIssued)
        )
        stored = StoredEvent(
            old["originator_id"], old["originator_version"], "ReceiptIssued",
            json.dumps(old).encode(),
        )  # fmt: skip
        event = ctx.store.mapper.to_domain_event(stored)
        assert isinstance(event, ReceiptIssued) and event.output_text_sha256 is None
        assert sha256_json(event.output) == output_sha
    finally:
        ctx.close()


def test_a_group_commit_refuses_only_the_run_whose_output_text_is_too_large(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_run_aggregate import AT, RECIPE

    monkeypatch.setenv("CONTROLROOM_MAX_EVENT_BYTES", "2048")
    ctx = Context.open(workspace)
    try:
        small, big = (
            Run.start(f"run_{n}", AT, RECIPE, TaskSpec(description="d"), None, "sess_1", "tr_1")
            for n in ("small", "big")
        )
        assert all(isinstance(r, list) for r in ctx.store.save_group([small, big]))
        fits, too_large = {"paths": ["Story/a.md"] * 40}, {"text": "x" * 5000}
        for run, output in ((small, fits), (big, too_large)):
            run.complete_tool_step(
                AT, ToolOutcome("rcpt_" + run.id, {}, [], output, sha256_json(output), "s", 1.0)
            )
            assert run.slot_values["found"] == output  # whole in memory, stored apart
        kept, refused = ctx.store.save_group([small, big])
        assert isinstance(refused, PayloadTooLargeError) and "TextStored" in str(refused)
        assert isinstance(kept, list) and kept
        reloaded = ctx.store.load(Run, "run_small")
        assert reloaded is not None and reloaded.slot_values["found"] == fits
        assert len(ctx.store.stream("run_big")) == 2  # its start only: nothing else recorded
    finally:
        ctx.close()
