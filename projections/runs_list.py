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


def _matching(
    status: str | None, recipe_id: str | None, before: str | None
) -> tuple[list[str], list[Any]]:
    """The conditions and parameters that pick the runs asked for."""
    wanted = {"status": status, "recipe_id": recipe_id}
    where = [f"{column} = ?" for column, value in wanted.items() if value is not None]
    params: list[Any] = [value for value in wanted.values() if value is not None]
    if before is not None:
        where.append(_BEFORE)
        params.append(before)
    return where, params


def _where(conditions: list[str]) -> str:
    return f"WHERE {' AND '.join(conditions)} " if conditions else ""


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
    where, params = _matching(status, recipe_id, before)
    select = f"SELECT {', '.join(SUMMARY)} FROM runs {_where(where)}"
    if limit is None:
        rows = conn.execute(f"{select}ORDER BY created_at, run_id", params).fetchall()
    else:
        rows = conn.execute(
            f"{select}ORDER BY created_at DESC, run_id DESC LIMIT ?", [*params, limit]
        ).fetchall()
        rows = list(reversed(rows))
    return [dict(zip(SUMMARY, row, strict=True)) for row in rows]


def count_runs(
    conn: Executes, status: str | None, recipe_id: str | None, before: str | None = None
) -> int:
    """How many runs match (created before the run `before`, when given)."""
    where, params = _matching(status, recipe_id, before)
    (count,) = conn.execute(f"SELECT count(*) FROM runs {_where(where)}", params).fetchone()
    return int(count)


def any_before(conn: Executes, status: str | None, recipe_id: str | None, before: str) -> bool:
    """Whether any matching run was created before the run `before` (one index probe, where
    counting them reads them all)."""
    where, params = _matching(status, recipe_id, before)
    return conn.execute(f"SELECT 1 FROM runs {_where(where)}LIMIT 1", params).fetchone() is not None


def has_run(conn: Executes, run_id: str) -> bool:
    return conn.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone() is not None
