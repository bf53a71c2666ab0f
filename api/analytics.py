"""HTTP analytics: built-in reports and read-only SQL over the DuckDB projection.

The server's catch-up loop keeps the analytics file following the log; each request catches
it up once more before it reads (read-your-writes), on analytics' own threads: never on the
event loop, nor on the default pool that runs share. Too many requests at once are refused
with 503 and Retry-After; a query past its time limit (waits included) is stopped (400
`query_timeout`), and one past its memory limit says so (400 `query_memory_limit`).

A report may be asked for a time range (`since`, `until`: ISO 8601, UTC when no offset is
given): it then reads only the runs that started in it, whole, and the other events that
happened in it (`analytics_sql.ranged_sql`); the times reach the SQL as datetimes, never as
the text sent.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from controlroom.api.bodies import read_body
from controlroom.api.errors import HttpError
from controlroom.api.faults import RETRY_AFTER_S
from controlroom.api.fields import Text
from controlroom.projections.analytics import AnalyticsProjection
from controlroom.projections.analytics_pool import AnalyticsBusyError
from controlroom.projections.analytics_query import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT_S,
    MAX_ROWS,
    MAX_TIMEOUT_S,
    AnalyticsQueryError,
    AnalyticsResult,
    QueryLimits,
)
from controlroom.projections.analytics_sql import REPORTS, parse_instant, ranged_sql


class AnalyticsQueryBody(BaseModel):
    """One read-only SQL statement (a SELECT) over the analytics tables and views."""

    model_config = ConfigDict(extra="forbid")
    sql: Text
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    max_rows: int = Field(default=DEFAULT_MAX_ROWS, ge=1, le=MAX_ROWS)


class ReportSummary(BaseModel):
    """A built-in report: `figure` is the column it is named for (the one its chart draws),
    `time_range` whether it can be asked for a time range (`since`, `until`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    title: str
    figure: str
    time_range: bool


def _analytics(request: Request) -> AnalyticsProjection:
    analytics: AnalyticsProjection = request.app.state.server.analytics
    return analytics


async def _answer(request: Request, sql: str, limits: QueryLimits) -> Response:
    try:
        result: AnalyticsResult = await _analytics(request).ask(sql, limits)
    except AnalyticsBusyError as exc:
        headers = {"Retry-After": str(RETRY_AFTER_S)}
        raise HttpError(503, "analytics_busy", str(exc), headers=headers) from None
    except AnalyticsQueryError as exc:
        raise HttpError(400, exc.code, str(exc), "sql") from None
    # Rendered by pydantic's serializer: an answer of megabytes holds the event loop less.
    return Response(result.model_dump_json(), media_type="application/json")


def list_reports(request: Request) -> JSONResponse:
    return JSONResponse(
        [
            ReportSummary(
                name=n, title=r.title, figure=r.figure, time_range=r.time_range
            ).model_dump()
            for n, r in REPORTS.items()
        ]
    )


def _instant(text: str, field: str, *, end: bool = False) -> datetime:
    try:
        return parse_instant(text, end=end)
    except ValueError:
        raise HttpError(
            400,
            "bad_time",
            f"{field} must be an ISO 8601 date or date-time (e.g. 2026-01-31 or "
            f"2026-01-31T09:30:00Z), not {text[:40]!r}",
            field,
        ) from None


def _time_range(request: Request) -> tuple[datetime | None, datetime | None]:
    since_text = request.query_params.get("since") or None
    until_text = request.query_params.get("until") or None
    since = _instant(since_text, "since") if since_text is not None else None
    until = _instant(until_text, "until", end=True) if until_text is not None else None
    if since is not None and until is not None and since > until:
        raise HttpError(400, "bad_time", "since must not be after until", "since")
    return since, until


async def get_report(request: Request) -> Response:
    name = request.path_params["name"]
    report = REPORTS.get(name)
    if report is None:
        raise HttpError(404, "not_found", f"no report '{name}'; known: {', '.join(REPORTS)}")
    raw = request.query_params.get("max_rows")
    try:
        limits = QueryLimits(max_rows=int(raw)) if raw is not None else QueryLimits()
    except (ValueError, ValidationError):
        raise HttpError(
            400, "bad_limit", f"max_rows must be a number from 1 to {MAX_ROWS}", "max_rows"
        ) from None
    since, until = _time_range(request)
    if (since is not None or until is not None) and not report.time_range:
        raise HttpError(
            400, "bad_time", f"the report '{name}' cannot be restricted to a time range", "since"
        )
    return await _answer(request, ranged_sql(report, since, until), limits)


async def post_query(request: Request) -> Response:
    body = await read_body(request, AnalyticsQueryBody)
    limits = QueryLimits(timeout_s=body.timeout_s, max_rows=body.max_rows)
    return await _answer(request, body.sql, limits)
