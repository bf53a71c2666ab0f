"""Which views file this release reads as is, light to import: the quick reads of `runs` and
`show` (api/quick_reads.py) trust a file only at this layout and these versions."""

from __future__ import annotations

#: `PRAGMA user_version` of a SQLite file's layout. A file of another layout (release 0.1 kept
#: one tracking row for all its views) holds nothing that cannot be rebuilt: it is dropped.
#: (PostgreSQL views have only ever had this layout, and share their schema with the log.)
LAYOUT = 2
#: The runs projection's fold version: a file written at another is rebuilt before it is read.
RUNS_VERSION = 8
