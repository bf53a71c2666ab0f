"""A child process that reads a stretch of a SQLite event log into Arrow and streams it out.

    python arrow_child.py DATABASE TABLE AFTER STOP

writes the records after position AFTER up to STOP, oldest first, to stdout as an Arrow IPC
stream (position, aggregate id, version, topic, stored state). It reads with the ADBC SQLite
driver, which turns rows into Arrow columns in C, many times faster than Python objects. It
runs in a process of its own because that driver links a second copy of SQLite, and two
copies in one process break each other's file locks and the write-ahead log's shared memory
(the store's writer is in the parent). It imports nothing from controlroom, so it runs by
path whatever the parent's import setup.
"""

from __future__ import annotations

import contextlib
import fcntl
import sys
from pathlib import Path

import adbc_driver_sqlite.dbapi as adbc_sqlite
import pyarrow as pa

#: Records per Arrow batch on the pipe; the parent cuts its own batches from the stream.
CHUNK = 16_384

SCHEMA = pa.schema(
    [
        ("position", pa.int64()),
        ("aggregate_id", pa.string()),
        ("version", pa.int64()),
        ("topic", pa.string()),
        ("state", pa.binary()),
    ]
)


def _pipe_size() -> int:
    """The largest pipe an unprivileged process may ask for, at most 4 MB."""
    try:
        allowed = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    except (OSError, ValueError):
        allowed = 1 << 20
    return min(allowed, 4 << 20)


def main(database: str, table: str, after: int, stop: int) -> None:
    if not table.isidentifier():
        raise SystemExit(f"not a table name: {table!r}")
    with contextlib.suppress(OSError, AttributeError):
        # A pipe of the largest size allowed (Linux; 64 kB by default): the stream crosses
        # in fewer, larger writes (a million events read in about half the time).
        fcntl.fcntl(sys.stdout.fileno(), fcntl.F_SETPIPE_SZ, _pipe_size())
    conn = adbc_sqlite.connect(Path(database).resolve().as_uri() + "?mode=ro")
    try:
        with (
            pa.ipc.new_stream(sys.stdout.buffer, SCHEMA) as out,
            conn.cursor() as cursor,
        ):
            while after < stop:
                cursor.execute(
                    "SELECT rowid, originator_id, originator_version, topic, state "
                    f"FROM {table} WHERE rowid > {int(after)} AND rowid <= {int(stop)} "
                    f"ORDER BY rowid LIMIT {CHUNK}"
                )
                found = cursor.fetch_arrow_table()
                if found.num_rows == 0:
                    break
                out.write_table(found.rename_columns(SCHEMA.names).cast(SCHEMA))
                after = int(found.column(0)[-1].as_py())
    finally:
        conn.close()


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    except BrokenPipeError:  # the parent stopped reading: nothing left to do
        sys.exit(0)
