"""How many records the analytics projection reads into its next batch.

Two things pull on the size. DuckDB writes a transaction that fills whole row groups of a
table straight to the file, compressed; a partly filled row group goes through the
write-ahead log and is written again at the checkpoint (a rebuild of a million events in
batches of 20,000 took about twice as long as in batches of one row group). So batches end
on row-group boundaries of `events`, which gets one row per record. But a batch is held in
memory whole, as Arrow columns and again inside DuckDB, and events can be large (a model's
reply, a chapter in a slot): so a batch also stays under a byte budget, judged from the
records read so far, and the first read of a catch-up is a small probe.
"""

from __future__ import annotations

from typing import Final

#: DuckDB's rows per row group (its default `row_group_size`).
ROW_GROUP: Final = 122_880
#: Stored bytes a batch may hold (the log's records as stored, before DuckDB's copy).
BATCH_BYTES: Final = 256 * 1024 * 1024
#: Records in the first read of a catch-up, before anything is known of their size.
PROBE: Final = 1_024


class BatchSizer:
    """The size of each read of one catch-up; `took` reports what a read gave."""

    def __init__(
        self,
        batch_size: int,
        rows_before: int,
        *,
        row_group: int | None = None,
        max_bytes: int | None = None,
        probe: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"a batch holds at least one record, not {batch_size}")
        self.batch_size = batch_size
        self._rows = rows_before
        self._row_group = row_group or ROW_GROUP
        self._max_bytes = max_bytes or BATCH_BYTES
        self._probe = probe or PROBE
        self._read_rows = 0
        self._read_bytes = 0
        self._last_mean = 0.0

    def next_limit(self) -> int:
        room = self._row_group - self._rows % self._row_group
        if not self._read_rows:
            return max(1, min(self.batch_size, self._probe, room))
        # The larger of the mean so far and the last batch's: a stretch of the log with
        # larger records than before shrinks the next batch at once.
        mean = max(self._read_bytes / self._read_rows, self._last_mean, 1.0)
        fits = max(1, int(self._max_bytes // mean))
        return min(self.batch_size, fits, room)

    def took(self, rows: int, stored_bytes: int) -> None:
        self._rows += rows
        if rows:
            self._read_rows += rows
            self._read_bytes += stored_bytes
            self._last_mean = stored_bytes / rows
