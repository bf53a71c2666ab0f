"""HTTP analytics: built-in reports and read-only SQL over the DuckDB projection.

The server's catch-up loop keeps the analytics file following the log; each request catches
it up once more before it reads (read-your-writes), on analytics' own threads: never on the
event loop, nor on the default pool that runs share. Too many requests at once are refused
with 503 and Retry-After; a query past its time limit (waits included) is stopped (400
`query_timeout`), and one past its memory limit says so (400 `query_memory_limit`).
"""

from __future__ import annotations

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
from controlroom.projections.analytics_sql import REPORTS


class AnalyticsQueryBody(BaseModel):
    """One read-only SQL statement (a SELECT) over the analytics tables and views."""

    model_config = ConfigDict(extra="forbid")
    sql: Text
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    max_rows: int = Field(default=DEFAULT_MAX_ROWS, ge=1, le=MAX_ROWS)


class ReportSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    title: str


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
        [ReportSummary(name=n, title=r.title).model_dump() for n, r in REPORTS.items()]
    )


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
    return await _answer(request, report.sql, limits)


async def post_query(request: Request) -> Response:
    body = await read_body(request, AnalyticsQueryBody)
    limits = QueryLimits(timeout_s=body.timeout_s, max_rows=body.max_rows)
    return await _answer(request, body.sql, limits)
