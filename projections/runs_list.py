"""The runs list as `GET /api/runs`, `controlroom runs` and the quick reads
(api/quick_reads.py) read it from the runs projection's table: light to import (plain
SQL over any connection with `execute`), so the quick reads load no engine."""

from __future__ import annotations

from typing import Any, Protocol

SUMMARY = (
    "run_id",
    "recipe_id",
    "status",
    "created_at",
    "completed_at",
    "description",
    "owner",
    "lease_expires_at",
    "damage",
)


class Executes(Protocol):
    def execute(self, sql: str, params: Any = ..., /) -> Any: ...


def list_runs(conn: Executes, status: str | None, recipe_id: str | None) -> list[dict[str, Any]]:
    wanted = {"status": status, "recipe_id": recipe_id}
    where = [f"{column} = ?" for column, value in wanted.items() if value is not None]
    rows = conn.execute(
        f"SELECT {', '.join(SUMMARY)} FROM runs "
        f"{'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY created_at, run_id",
        [value for value in wanted.values() if value is not None],
    ).fetchall()
    return [dict(zip(SUMMARY, row, strict=True)) for row in rows]
