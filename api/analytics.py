"""HTTP analytics: built-in reports and read-only SQL over the DuckDB projection.

The server's catch-up loop keeps the analytics file following the log; each request catches
it up once more before it reads (read-your-writes), off the event loop.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse

from controlroom.api.bodies import read_body
from controlroom.api.errors import HttpError
from controlroom.projections.analytics import AnalyticsProjection
from controlroom.projections.analytics_query import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT_S,
    MAX_ROWS,
    MAX_TIMEOUT_S,
    AnalyticsQueryError,
    AnalyticsResult,
    QueryLimits,
)
from controlroom.projections.analytics_sql import REPORTS

MAX_SQL = 100_000


class AnalyticsQueryBody(BaseModel):
    """One read-only SQL statement (a SELECT) over the analytics tables and views."""

    model_config = ConfigDict(extra="forbid")
    sql: str = Field(min_length=1, max_length=MAX_SQL)
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    max_rows: int = Field(default=DEFAULT_MAX_ROWS, ge=1, le=MAX_ROWS)


class ReportSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    title: str


def _analytics(request: Request) -> AnalyticsProjection:
    analytics: AnalyticsProjection = request.app.state.server.analytics
    return analytics


def _answer(analytics: AnalyticsProjection, sql: str, limits: QueryLimits) -> AnalyticsResult:
    analytics.catch_up()
    try:
        return analytics.query(sql, limits)
    except AnalyticsQueryError as exc:
        raise HttpError(400, exc.code, str(exc), "sql") from None


def list_reports(request: Request) -> JSONResponse:
    return JSONResponse(
        [ReportSummary(name=n, title=r.title).model_dump() for n, r in REPORTS.items()]
    )


def get_report(request: Request) -> JSONResponse:
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
    result = _answer(_analytics(request), report.sql, limits)
    return JSONResponse(result.model_dump(mode="json"))


async def post_query(request: Request) -> JSONResponse:
    body = await read_body(request, AnalyticsQueryBody)
    limits = QueryLimits(timeout_s=body.timeout_s, max_rows=body.max_rows)
    result = await asyncio.to_thread(_answer, _analytics(request), body.sql, limits)
    return JSONResponse(result.model_dump(mode="json"))
