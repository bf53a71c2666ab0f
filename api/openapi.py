"""The OpenAPI 3.1 document for every endpoint and body, built from the pydantic models.

Request bodies and responses are the models the API itself validates and answers with (the
view models of `controlroom.projections.models`), so the document cannot drift from them.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel, TypeAdapter

from controlroom.api.analytics import AnalyticsQueryBody, ReportSummary
from controlroom.api.bodies import RouteBody, StartRunBody
from controlroom.api.limits import MAX_PAGE
from controlroom.api.openapi_issues import issue_paths
from controlroom.api.openapi_links import make_fuzzable
from controlroom.api.openapi_loops import loop_paths
from controlroom.api.openapi_plans import conference_paths, plan_paths
from controlroom.api.openapi_status import pipeline_paths
from controlroom.api.openapi_whatif import whatif_paths
from controlroom.domain.recipe import Recipe
from controlroom.domain.run_events import RoutingDecision
from controlroom.projections.analytics_query import AnalyticsResult
from controlroom.projections.analytics_sql import REPORTS
from controlroom.projections.models import (
    AuditTrail,
    IssueView,
    RecipeSummary,
    RunDetail,
    RunState,
    RunSummary,
    SlotView,
    StepView,
)
from controlroom.projections.statuses import RUN_STATUSES

_REF = "#/components/schemas/{model}"
_MAX = 2**63 - 1  # positions and versions are signed 64-bit integers


class _Components:
    """Collects each model's JSON Schema under `components/schemas`, its `$defs` hoisted
    beside it, and hands out `$ref`s to it."""

    def __init__(self) -> None:
        self.schemas: dict[str, Any] = {}

    def ref(self, model: type[BaseModel], **options: Any) -> dict[str, Any]:
        return self._add(model.__name__, model.model_json_schema(ref_template=_REF, **options))

    def union(self, name: str, annotation: Any) -> dict[str, Any]:
        return self._add(name, TypeAdapter(annotation).json_schema(ref_template=_REF))

    def array(self, model: type[BaseModel]) -> dict[str, Any]:
        return {"type": "array", "items": self.ref(model)}

    def _add(self, name: str, schema: dict[str, Any]) -> dict[str, Any]:
        self.schemas.update(schema.pop("$defs", {}))
        self.schemas[name] = schema
        return {"$ref": _REF.format(model=name)}


def _param(name: str, where: str, schema: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, "in": where, "required": where == "path", "schema": schema, **extra}


_ERROR = {"$ref": "#/components/schemas/Error"}
_RUN_ID = _param("run_id", "path", {"type": "string"})
_AFTER = _param(
    "after",
    "query",
    {"type": "integer", "minimum": 0, "maximum": _MAX},
    description="resume strictly after this position (or send Last-Event-ID)",
)


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    text = {
        400: "bad input",
        401: "missing or wrong bearer token",
        404: "not found",
        409: "conflicts with the state of the run, plan or issue",
        413: "body too large",
        422: "the run's stored events are damaged",
        502: "the model's replies were not valid after the retries",
        503: "the store is unavailable (disk full, read-only, locked); see Retry-After",
    }
    return {str(c): _json(_ERROR, text[c]) for c in codes}


def _op(summary: str, ok: dict[str, Any], *errors: int, **extra: Any) -> dict[str, Any]:
    return {"summary": summary, "responses": {**ok, **_errors(401, *errors, 503)}, **extra}


def _analytics_op(summary: str, ok: dict[str, Any], *errors: int, **extra: Any) -> dict[str, Any]:
    """An analytics operation: its 400s and 503s say what analytics adds to them."""
    op = _op(summary, ok, *errors, **extra)
    op["responses"]["400"] = _json(
        _ERROR,
        "bad input, refused or failed SQL, or a query stopped at its time limit "
        "(`query_timeout`) or its memory limit (`query_memory_limit`)",
    )
    op["responses"]["503"] = _json(
        _ERROR,
        "too many analytics requests are running or waiting (`analytics_busy`), or the store "
        "is unavailable; see Retry-After",
    )
    return op


def _body(name: str) -> dict[str, Any]:
    return {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}},
    }


_SSE = {
    "200": {
        "description": "text/event-stream; id = global position, event = type",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}


@cache
def openapi_document() -> dict[str, Any]:
    models = _Components()
    run_state = models.ref(RunState)
    run_detail = models.ref(RunDetail)
    paths: dict[str, Any] = {
        "/api/runs": {
            "post": _op(
                "Start a run",
                {"201": _json(run_state, "started")},
                400,
                413,
                requestBody=_body("StartRunBody"),
            ),
            "get": _op(
                "List runs, oldest first: all of them, or with `limit` the newest `limit` "
                'created before the run `before`; a `Link: <…>; rel="next"` header names the '
                "page of older runs while there are any",
                {"200": _json(models.array(RunSummary), "runs")},
                400,
                404,
                parameters=[
                    _param(
                        "status",
                        "query",
                        {"type": "string", "enum": list(RUN_STATUSES)},
                    ),
                    _param("recipe_id", "query", {"type": "string"}),
                    _param(
                        "limit", "query", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}
                    ),
                    _param("before", "query", {"type": "string"}),
                ],
            ),
        },
        "/api/runs/{run_id}": {
            "get": _op(
                "Consolidated run view",
                {"200": _json(run_detail, "run")},
                404,
                parameters=[_RUN_ID],
            )
        },
        "/api/runs/{run_id}/steps": {
            "get": _op(
                "Full step log",
                {"200": _json(models.array(StepView), "steps")},
                404,
                parameters=[_RUN_ID],
            )
        },
        "/api/runs/{run_id}/cache/{slot}": {
            "get": _op(
                "One cache slot",
                {"200": _json(models.union("SlotView", SlotView), "slot")},
                404,
                parameters=[
                    _RUN_ID,
                    _param("slot", "path", {"type": "string"}),
                ],
            )
        },
        "/api/runs/{run_id}/cancel": {
            "post": _op(
                "Cancel a running run",
                {"200": _json(run_state, "cancelled")},
                404,
                409,
                parameters=[_RUN_ID],
            )
        },
        "/api/runs/{run_id}/retry": {
            "post": _op(
                "Continue a failed run from the failed step, or from an earlier one",
                {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {
                                "run_id": {"type": "string"},
                                "status": {"type": "string"},
                                "from": {"type": ["string", "null"]},
                            },
                        },
                        "reopened (RunRetried recorded); `from` is the step instance run next",
                    )
                },
                400,
                404,
                409,
                parameters=[_RUN_ID],
                requestBody={
                    "required": False,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"from": {"type": "string"}},
                                "additionalProperties": False,
                            }
                        }
                    },
                },
            )
        },
        "/api/runs/{run_id}/requests/{ref}": {
            "get": _op(
                "The exact request an agent step sent to its model",
                {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {
                                "run_id": {"type": "string"},
                                "step_id": {"type": ["string", "null"]},
                                "ref": {"type": "string"},
                                "provider": {"type": "string"},
                                "model": {"type": "string"},
                                "body": {
                                    "type": "object",
                                    "additionalProperties": True,
                                    "description": "the JSON body as the provider sent it",
                                },
                            },
                        },
                        "ref, provider, model and the body as sent (no key)",
                    )
                },
                400,
                404,
                parameters=[
                    _RUN_ID,
                    _param("ref", "path", {"type": "string"}, description="a step id or sha256:"),
                ],
            )
        },
        "/api/runs/{run_id}/audit": {
            "get": _op(
                "Events with hashes, or the view at a version",
                {
                    "200": _json(
                        {"oneOf": [models.ref(AuditTrail), run_detail]},
                        "the events with their hashes; with `at`, the run view at that version",
                    )
                },
                400,
                404,
                422,
                parameters=[
                    _RUN_ID,
                    _param("at", "query", {"type": "integer", "minimum": 1, "maximum": _MAX}),
                ],
            )
        },
        "/api/runs/{run_id}/events": {
            "get": _op(
                "Follow a run's events live (ends after its final event)",
                _SSE,
                400,
                404,
                parameters=[_RUN_ID, _AFTER],
            )
        },
        "/api/events": {
            "get": _op(
                "Follow every event live",
                _SSE,
                400,
                parameters=[
                    _AFTER,
                    _param("run_id", "query", {"type": "string"}),
                    _param(
                        "type",
                        "query",
                        {"type": "string"},
                        description="comma-separated event types",
                    ),
                ],
            )
        },
        "/api/issues": {
            "get": _op(
                "List issues",
                {"200": _json(models.array(IssueView), "issues")},
                parameters=[_param("run_id", "query", {"type": "string"})],
            )
        },
        "/api/issues/{issue_id}": {
            "get": _op(
                "One issue",
                {"200": _json(models.ref(IssueView), "issue")},
                404,
                parameters=[_param("issue_id", "path", {"type": "string"})],
            )
        },
        "/api/recipes": {
            "get": _op("List recipes", {"200": _json(models.array(RecipeSummary), "recipes")})
        },
        "/api/recipes/{recipe_id}": {
            "get": _op(
                "One recipe",
                {"200": _json(models.ref(Recipe, by_alias=True), "recipe")},
                400,
                parameters=[_param("recipe_id", "path", {"type": "string"})],
            )
        },
        "/api/analytics/reports": {
            "get": _op(
                "List the built-in analytics reports",
                {"200": _json(models.array(ReportSummary), "reports")},
            )
        },
        "/api/analytics/reports/{name}": {
            "get": _analytics_op(
                "Run a built-in analytics report",
                {"200": _json(models.ref(AnalyticsResult), "the report's rows")},
                400,
                404,
                parameters=[
                    _param("name", "path", {"type": "string", "enum": list(REPORTS)}),
                    _param("max_rows", "query", {"type": "integer", "minimum": 1}),
                    _param(
                        "since",
                        "query",
                        {"type": "string"},
                        description="only what happened from then on (an ISO 8601 date or "
                        "date-time, UTC without an offset): runs that started then, whole",
                    ),
                    _param(
                        "until",
                        "query",
                        {"type": "string"},
                        description="only what happened before then (an ISO 8601 date-time; "
                        "a date alone includes that day); 400 `bad_time` for an unreadable "
                        "time or a report that cannot be restricted (`time_range` false)",
                    ),
                ],
            )
        },
        "/api/analytics/query": {
            "post": _analytics_op(
                "Run one read-only SQL SELECT over the analytics tables and views",
                {"200": _json(models.ref(AnalyticsResult), "the query's rows")},
                400,
                413,
                requestBody=_body("AnalyticsQueryBody"),
            )
        },
        "/api/route": {
            "post": _op(
                "Route a task description to a recipe",
                {"200": _json(models.ref(RoutingDecision), "routing decision")},
                400,
                413,
                requestBody=_body("RouteBody"),
            )
        },
    }
    paths.update(plan_paths(models))
    paths.update(issue_paths(models))
    paths.update(conference_paths(models))
    paths.update(pipeline_paths(models))
    paths.update(loop_paths(models))
    paths.update(whatif_paths())
    paths["/metrics"] = {
        "get": _op(
            "Prometheus metrics: runs, steps, model calls, tokens, cost, retries and "
            "escalations counted from the analytics projection; runs by status, projection "
            "lag and SSE clients now (the token is not needed with CONTROLROOM_METRICS_OPEN=1)",
            {
                "200": {
                    "description": "the Prometheus text format",
                    "content": {"text/plain": {"schema": {"type": "string"}}},
                }
            },
        )
    }
    models.ref(StartRunBody)
    models.ref(RouteBody)
    models.ref(AnalyticsQueryBody)
    schemas = {
        **models.schemas,
        "Error": {
            "type": "object",
            "required": ["error"],
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {
                        "code": {"type": "string"},
                        "message": {"type": "string"},
                        "field": {"type": "string"},
                    },
                }
            },
        },
    }
    return make_fuzzable(
        {
            "openapi": "3.1.0",
            "info": {
                "title": "Control Room",
                "version": "0.1.0",
                "description": "Durable, auditable multi-agent runs on an event store.",
            },
            "paths": paths,
            "components": {
                "schemas": schemas,
                "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            },
            "security": [{"bearer": []}, {}],
        }
    )
