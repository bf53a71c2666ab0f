"""How the analytics projection sizes its batches: whole row groups, under a byte budget."""

from __future__ import annotations

import pyarrow as pa
import pytest

from controlroom.eventstore.arrow_log import records_table
from controlroom.projections.analytics import as_text
from controlroom.projections.analytics_batches import BatchSizer


def sizes(sizer: BatchSizer, total: int, record_bytes: int) -> list[int]:
    """The reads a catch-up of `total` records of `record_bytes` each would make."""
    taken: list[int] = []
    while (left := total - sum(taken)) > 0:
        rows = min(sizer.next_limit(), left)
        sizer.took(rows, rows * record_bytes)
        taken.append(rows)
    return taken


def test_after_a_probe_the_batches_fill_whole_row_groups() -> None:
    sizer = BatchSizer(1_000_000, 0, row_group=1000, max_bytes=10**9, probe=64)
    taken = sizes(sizer, 3500, 100)
    assert taken == [64, 936, 1000, 1000, 500]


def test_a_catch_up_starts_by_filling_the_row_group_left_part_full() -> None:
    sizer = BatchSizer(1_000_000, 2_300, row_group=1000, max_bytes=10**9, probe=64)
    assert sizes(sizer, 2000, 100) == [64, 636, 1000, 300]


def test_large_records_make_smaller_batches_within_the_byte_budget() -> None:
    sizer = BatchSizer(1_000_000, 0, row_group=1000, max_bytes=50_000, probe=64)
    taken = sizes(sizer, 1000, 1_000)
    assert taken[0] == 64
    assert all(rows <= 50 for rows in taken[1:])
    assert sum(taken) == 1000


def test_a_stretch_of_larger_records_shrinks_the_next_batch_at_once() -> None:
    sizer = BatchSizer(1_000_000, 0, row_group=10_000, max_bytes=1_000_000, probe=100)
    sizer.took(100, 100 * 10)  # small records first: up to the row group
    assert sizer.next_limit() == 9_900
    sizer.took(500, 500 * 10_000)  # then large ones: the budget decides
    assert sizer.next_limit() == 100


def test_the_callers_batch_size_caps_every_read() -> None:
    sizer = BatchSizer(7, 0, row_group=1000, max_bytes=10**9, probe=64)
    assert sizes(sizer, 20, 10) == [7, 7, 6]
    with pytest.raises(ValueError):
        BatchSizer(0, 0)


def test_states_become_text_and_a_damaged_one_keeps_its_readable_part() -> None:
    records = records_table(
        [(1, "run_a", 1, "RunStarted", b'{"a":"caf\xc3\xa9"}'), (2, "run_a", 2, "X", b"{\xff}")]
    )
    text = as_text(records)
    assert text.schema.field("state").type == pa.string()
    assert text.column("state").to_pylist() == ['{"a":"café"}', "{\ufffd}"]
    assert text.column("position").to_pylist() == [1, 2]
