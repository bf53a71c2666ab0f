"""What analytics may use in one process: DuckDB's memory, threads and spill space for a
user's query, the size of an answer, and how many requests run or wait at once.

DuckDB's own defaults are for a machine given to DuckDB (80% of the RAM, a thread per core,
spilling up to 90% of the free disk); a server running models and tools beside it needs
smaller ones. `engine/settings.py` reads them from the environment, under these names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

MEMORY_LIMIT_VAR: Final = "CONTROLROOM_ANALYTICS_MEMORY_LIMIT"
THREADS_VAR: Final = "CONTROLROOM_ANALYTICS_THREADS"
TEMP_LIMIT_VAR: Final = "CONTROLROOM_ANALYTICS_TEMP_LIMIT"
MAX_RESULT_BYTES_VAR: Final = "CONTROLROOM_ANALYTICS_MAX_RESULT_BYTES"
WORKERS_VAR: Final = "CONTROLROOM_ANALYTICS_WORKERS"
QUEUE_VAR: Final = "CONTROLROOM_ANALYTICS_QUEUE"

#: A size as DuckDB reads it: `512MB`, `2GB`, `1.5GiB`.
_SIZE: Final = re.compile(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", re.IGNORECASE)


def is_size(text: str) -> bool:
    return _SIZE.fullmatch(text.strip()) is not None


@dataclass(frozen=True)
class AnalyticsResources:
    #: DuckDB's `memory_limit` for a user's query; past it the query fails, naming it.
    memory_limit: str = "1GB"
    #: DuckDB's `threads` for a user's query.
    threads: int = 2
    #: DuckDB's `max_temp_directory_size`: what a query may spill into `analytics.duckdb.tmp`.
    temp_limit: str = "2GB"
    #: An answer's rows stop once their JSON passes this many bytes (`truncated` says so).
    max_result_bytes: int = 16 * 1024 * 1024
    #: Threads of analytics' own that answer the server's requests (never the event loop's
    #: default pool, which runs share); they take turns on the file, each within its time.
    workers: int = 2
    #: Requests that may wait for those threads; one more is refused at once (HTTP 503).
    queue: int = 8

    def duckdb_config(self) -> dict[str, str | int]:
        """The settings a user's query connection opens with."""
        return {
            "memory_limit": self.memory_limit,
            "threads": self.threads,
            "max_temp_directory_size": self.temp_limit,
        }
