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


#: Row values compare as the ORDER BY does: (created_at, run_id) before the cursor run's.
_BEFORE = "(created_at, run_id) < (SELECT created_at, run_id FROM runs WHERE run_id = ?)"


class Executes(Protocol):
    def execute(self, sql: str, params: Any = ..., /) -> Any: ...


def list_runs(
    conn: Executes,
    status: str | None,
    recipe_id: str | None,
    limit: int | None = None,
    before: str | None = None,
) -> list[dict[str, Any]]:
    """The runs that match, oldest first: all of them, or with `limit` the newest `limit`
    of those created before the run `before` (a page; the index on (created_at, run_id)
    serves it without reading the rest)."""
    wanted = {"status": status, "recipe_id": recipe_id}
    where = [f"{column} = ?" for column, value in wanted.items() if value is not None]
    params: list[Any] = [value for value in wanted.values() if value is not None]
    if before is not None:
        where.append(_BEFORE)
        params.append(before)
    clause = f"WHERE {' AND '.join(where)} " if where else ""
    if limit is None:
        rows = conn.execute(
            f"SELECT {', '.join(SUMMARY)} FROM runs {clause}ORDER BY created_at, run_id", params
        ).fetchall()
    else:
        rows = conn.execute(
            f"SELECT {', '.join(SUMMARY)} FROM runs {clause}"
            "ORDER BY created_at DESC, run_id DESC LIMIT ?",
            [*params, limit],
        ).fetchall()
        rows = list(reversed(rows))
    return [dict(zip(SUMMARY, row, strict=True)) for row in rows]


def count_runs(
    conn: Executes, status: str | None, recipe_id: str | None, before: str | None = None
) -> int:
    """How many runs match (created before the run `before`, when given)."""
    wanted = {"status": status, "recipe_id": recipe_id}
    where = [f"{column} = ?" for column, value in wanted.items() if value is not None]
    params: list[Any] = [value for value in wanted.values() if value is not None]
    if before is not None:
        where.append(_BEFORE)
        params.append(before)
    (count,) = conn.execute(
        f"SELECT count(*) FROM runs {'WHERE ' + ' AND '.join(where) if where else ''}", params
    ).fetchone()
    return int(count)


def any_before(conn: Executes, status: str | None, recipe_id: str | None, before: str) -> bool:
    """Whether any matching run was created before the run `before` (one index probe, where
    counting them reads them all)."""
    wanted = {"status": status, "recipe_id": recipe_id}
    where = [f"{column} = ?" for column, value in wanted.items() if value is not None]
    params: list[Any] = [value for value in wanted.values() if value is not None]
    row = conn.execute(
        f"SELECT 1 FROM runs WHERE {' AND '.join([*where, _BEFORE])} LIMIT 1", [*params, before]
    ).fetchone()
    return row is not None


def has_run(conn: Executes, run_id: str) -> bool:
    return conn.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone() is not None
