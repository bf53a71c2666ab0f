"""The envelope cut out of each stored record on the reading thread, before DuckDB loads it:
the same timestamp and payload the slow rules give, every other shape left to those rules."""

from __future__ import annotations

import asyncio
from pathlib import Path

import duckdb
import orjson
import pyarrow as pa

from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest, RunService
from controlroom.eventstore.arrow_log import arrow_reader, records_table
from controlroom.eventstore.config import store_env
from controlroom.eventstore.store import EventStore
from controlroom.projections.analytics import StagedBatch, as_text
from controlroom.projections.analytics_sql import INGEST, TABLES
from controlroom.projections.analytics_staging import split_envelopes

ENVELOPE = ("originator_id", "originator_version", "timestamp", "prev_hash", "event_hash")
HASH = "ab" * 32


def stored(
    aggregate_id: str, version: int, fields: str, stamp: str = "2026-01-02T03:04:05Z"
) -> str:
    """A state as the store's encoder writes it: the envelope, then the event's fields."""
    head = (
        f'{{"originator_id":"{aggregate_id}","originator_version":{version},'
        f'"timestamp":"{stamp}","prev_hash":"{HASH}","event_hash":"{HASH}"'
    )
    return head + ("," + fields if fields else "") + "}"


def table(
    rows: list[tuple[str, int, str | None]], chunks: int = 1, topic: str = "Made"
) -> pa.Table:
    records = records_table(
        [
            (position, aggregate_id, version, topic, None if state is None else state.encode())
            for position, (aggregate_id, version, state) in enumerate(rows, start=1)
        ]
    )
    text = as_text(records)
    if chunks > 1:  # as the child process's stream arrives: several record batches
        size = -(-text.num_rows // chunks)
        text = pa.Table.from_batches(text.to_batches(max_chunksize=size))
    return text


def test_a_real_runs_records_are_cut_as_the_envelope_says(workspace: Path) -> None:
    store = EventStore(env=store_env(workspace, "sqlite:events.sqlite"))
    service = RunService(Context.open(workspace, store=store))
    asyncio.run(service.execute(service.start(RunRequest("Draft scene 4", {}))))
    with arrow_reader(store) as read:
        records = as_text(read(0, store.max_position(), 10**6))
    store.close()
    states = records.column("state").to_pylist()  # (the split writes into the records)
    split = split_envelopes(records)
    assert split.num_rows == records.num_rows > 20
    assert split.column("fallback").null_count == split.num_rows  # every record had its shape
    for state, stamp, payload in zip(
        states,
        split.column("timestamp_text").to_pylist(),
        split.column("payload").to_pylist(),
        strict=True,
    ):
        whole = orjson.loads(state)
        assert stamp == whole["timestamp"]
        assert orjson.loads(payload) == {k: v for k, v in whole.items() if k not in ENVELOPE}


def test_other_shapes_are_left_whole_for_the_slow_rules() -> None:
    rows: list[tuple[str, int, str | None]] = [
        ("run_a", 1, stored("run_a", 1, '"step_id":"écrire"')),
        ("run_a", 2, stored("run_a", 2, "")),  # no fields of its own: an empty payload
        ("run_a", 3, None),
        ("run_a", 4, ""),
        ("run_a", 5, '{"payload":"no envelope"}'),
        ("run_a", 6, stored("run_a", 6, '"x":1').replace(HASH, "short")),
        ("run_a", 7, stored("run_a", 70, '"x":1')),  # the version is not the stored one
        ("run_\u00e9", 8, stored("run_\\u00e9", 8, '"x":1')),  # an escaped id
        ("run_a", 9, stored("run_a", 9, '"x":1')[:-1]),  # cut short
    ]
    split = split_envelopes(table(rows))
    assert split.column("payload").to_pylist() == [
        '{"step_id":"écrire"}', "{}", None, None, None, None, None, None, None,
    ]  # fmt: skip
    assert split.column("timestamp_text").to_pylist()[:3] == ["2026-01-02T03:04:05Z"] * 2 + [None]
    fallback = split.column("fallback").to_pylist()
    assert fallback[:3] == [None, None, None]
    assert fallback[3:] == [state for _, _, state in rows[3:]]


def test_records_in_several_chunks_or_slices_of_one_are_cut_the_same() -> None:
    rows: list[tuple[str, int, str | None]] = [
        (f"run_{n}", n, stored(f"run_{n}", n, f'"n":{n},"text":"{"x" * n}"')) for n in range(1, 40)
    ]
    expected = split_envelopes(table(rows)).column("payload").to_pylist()
    assert expected[2] == '{"n":3,"text":"xxx"}'
    several = table(rows, chunks=4)
    assert several.column("state").num_chunks == 4
    assert split_envelopes(several).column("payload").to_pylist() == expected
    # As the child's stream is taken: two batches sliced from one, sharing its bytes.
    shared = table(rows)
    first, second = shared.slice(0, 17), shared.slice(17)
    cut = [*split_envelopes(first).column("payload").to_pylist()]
    cut += split_envelopes(second).column("payload").to_pylist()
    assert cut == expected


def loaded(records: pa.Table) -> duckdb.DuckDBPyConnection:
    """The batch staged and loaded by the projection's own steps, into a database of its
    own."""
    con = duckdb.connect()
    for statement in TABLES:
        con.execute(statement)
    batch = StagedBatch.of(records, duckdb.connect())
    con.register("raw_batch", batch.columns)
    for statement in INGEST:
        con.execute(statement)
    for name, rows in batch.derived:
        con.register("derived_rows", rows)
        con.execute(f"INSERT INTO {name} SELECT * FROM derived_rows")
    return con


EVENTS = "SELECT position, aggregate_type, timestamp::VARCHAR, payload FROM events ORDER BY 1"
SHAPES: list[tuple[str, int, str | None]] = [
    ("run_a", 1, stored("run_a", 1, '"recipe_id":"draft"')),
    ("run_a", 2, stored("run_a", 2, '"broken":')),  # its shape, but not JSON
    ("run_a", 3, stored("run_a", 3, '"recipe_id":"x"').replace(HASH, "short", 1)),  # slow rules
    ("run_a", 4, '{"timestamp":"2026-05-06T07:08:09.5Z","recipe_id":"y"}'),  # no envelope
    ("run_a", 5, '{"timestamp":"2026-05-06T07:08:09.5Z","recipe_id":'),  # nor JSON
]


def test_the_loader_checks_the_payload_and_takes_other_shapes_apart_the_same_way() -> None:
    assert loaded(table(SHAPES)).execute(EVENTS).fetchall() == [
        (1, "made", "2026-01-02 03:04:05", '{"recipe_id":"draft"}'),
        (2, "made", "2026-01-02 03:04:05", None),
        (3, "made", "2026-01-02 03:04:05", '{"recipe_id":"x"}'),
        (
            4,
            "made",
            "2026-05-06 07:08:09.5",
            '{"timestamp":"2026-05-06T07:08:09.5Z","recipe_id":"y"}',
        ),
        (5, "made", "2026-05-06 07:08:09.5", None),
    ]


def test_a_payload_a_table_is_derived_from_is_checked_as_json_where_it_is_parsed() -> None:
    """Rows whose payload is parsed for a derived table (here `run_events`) have it checked
    there, and read the same as rows checked on their own."""
    con = loaded(table(SHAPES, topic="controlroom.domain.events:RunStarted.v1"))
    assert con.execute(EVENTS).fetchall() == [
        (1, "run", "2026-01-02 03:04:05", '{"recipe_id":"draft"}'),
        (2, "run", "2026-01-02 03:04:05", None),
        (3, "run", "2026-01-02 03:04:05", '{"recipe_id":"x"}'),
        (
            4,
            "run",
            "2026-05-06 07:08:09.5",
            '{"timestamp":"2026-05-06T07:08:09.5Z","recipe_id":"y"}',
        ),
        (5, "run", "2026-05-06 07:08:09.5", None),
    ]
    assert con.execute(
        "SELECT position, event_type, timestamp::VARCHAR, recipe_id FROM run_events ORDER BY 1"
    ).fetchall() == [
        (1, "RunStarted", "2026-01-02 03:04:05", "draft"),
        (2, "RunStarted", "2026-01-02 03:04:05", None),
        (3, "RunStarted", "2026-01-02 03:04:05", "x"),
        (4, "RunStarted", "2026-05-06 07:08:09.5", "y"),
        (5, "RunStarted", "2026-05-06 07:08:09.5", None),
    ]
