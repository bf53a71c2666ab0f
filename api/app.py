"""The HTTP API (appendix D and the read side), built from explicit routes and a lifespan."""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlencode

from eventsourcing.persistence import MapperDeserialisationError
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from controlroom.api import (
    analytics,
    conference_http,
    dashboard,
    issues_http,
    loops_http,
    metrics,
    plans_http,
    status_http,
    whatif_http,
)
from controlroom.api.bodies import RouteBody, StartRunBody, read_body
from controlroom.api.checkpointer import Checkpointer
from controlroom.api.errors import (
    STORE_ERRORS,
    HttpError,
    error_body,
    handle_damaged_event,
    handle_domain_error,
    handle_http_error,
    handle_store_error,
)
from controlroom.api.limits import LimitError, check_id, parse_page_size, parse_position
from controlroom.api.openapi import openapi_document
from controlroom.api.origin_guard import OriginGuard, ServedHosts
from controlroom.api.server import Server
from controlroom.api.sse import log_stream, run_stream
from controlroom.domain.errors import ControlRoomError, RetryStepError, RunNotFoundError
from controlroom.domain.events import DomainEvent
from controlroom.domain.run_events import RunOrigin
from controlroom.engine.context import Context
from controlroom.engine.ports import owner_is_gone
from controlroom.engine.service import RunRequest
from controlroom.eventstore.store import Damaged
from controlroom.projections.audit import audit_trail
from controlroom.projections.models import AuditTrail, RunDetail
from controlroom.projections.queries import Queries
from controlroom.projections.run_view import build_run_view
from controlroom.projections.statuses import RUN_STATUSES

TOKEN_VAR = "CONTROLROOM_API_TOKEN"


def _server(request: Request) -> Server:
    server: Server = request.app.state.server
    return server


def _queries(request: Request) -> Queries:
    """The typed read side, caught up with every commit so far (read-your-writes)."""
    return _server(request).read_views().query


def _run_view(request: Request) -> None:
    """404 unless the run exists."""
    run_id = request.path_params["run_id"]
    if _queries(request).run_status(run_id) is None:
        raise RunNotFoundError(run_id)


def _json(value: BaseModel | list[Any]) -> JSONResponse:
    if isinstance(value, BaseModel):
        return JSONResponse(value.model_dump(mode="json"))
    return JSONResponse([v.model_dump(mode="json") for v in value])


async def start_run(request: Request) -> JSONResponse:
    body = await read_body(request, StartRunBody)
    task = body.recipe_id or body.task or ""
    run = await _server(request).start_run(
        RunRequest(
            task,
            body.args,
            session_id=body.session_id,
            description=body.task if body.recipe_id else None,
            is_recipe_id=body.recipe_id is not None,
            origin=RunOrigin(kind="user", via="http"),
        )
    )
    status = run.status.value if _server(request).execute else "queued"
    return JSONResponse({"run_id": run.id, "status": status}, status_code=201)


# The reads below are plain functions: Starlette runs them in its thread pool, so SQLite
# work never holds up the event loop (and the live feeds on it).


def list_runs(request: Request) -> JSONResponse:
    params = request.query_params
    status = params.get("status")
    if status is not None and status not in RUN_STATUSES:
        raise HttpError(
            400, "bad_filter", f"status must be one of {', '.join(RUN_STATUSES)}", "status"
        )
    recipe_id = params.get("recipe_id")
    limit = parse_page_size(params["limit"], "limit") if "limit" in params else None
    before = check_id(params["before"], "before") if "before" in params else None
    queries = _queries(request)
    rows = queries.runs(status, recipe_id, limit, before)
    response = _json(rows)
    if limit is not None and rows and queries.any_runs_before(status, recipe_id, rows[0].run_id):
        # The page of older runs: the same filters, before the oldest run on this one.
        older = {k: v for k, v in params.items() if k != "before"} | {"before": rows[0].run_id}
        response.headers["Link"] = f'</api/runs?{urlencode(older)}>; rel="next"'
    return response


def get_run(request: Request) -> JSONResponse:
    return _json(_queries(request).run(request.path_params["run_id"]))


def get_steps(request: Request) -> JSONResponse:
    return _json(_queries(request).steps(request.path_params["run_id"]))


def get_slot(request: Request) -> JSONResponse:
    slot = request.path_params["slot"]
    found = _queries(request).slot(request.path_params["run_id"], slot)
    if found is None:
        raise HttpError(404, "not_found", f"run has no slot '{slot}'", "slot")
    return _json(found)


async def cancel_run(request: Request) -> JSONResponse:
    run_id = request.path_params["run_id"]
    await run_in_threadpool(_run_view, request)  # 404 before anything else
    run = await _server(request).cancel(run_id)
    return JSONResponse({"run_id": run.id, "status": run.status.value})


async def retry_run(request: Request) -> JSONResponse:
    """Continue a failed run from the failed step, or from `{"from": STEP_ID}`."""
    run_id = request.path_params["run_id"]
    await run_in_threadpool(_run_view, request)  # 404 before anything else
    raw = await request.body()
    try:
        body = json.loads(raw) if raw.strip() else {}
    except ValueError:
        raise HttpError(400, "bad_json", "the body is not valid JSON", "body") from None
    from_step = body.get("from") if isinstance(body, dict) else None
    if from_step is not None and not isinstance(from_step, str):
        raise HttpError(400, "bad_field", "from must be a step id", "from")
    server = _server(request)
    owner = server.executor.owner if server.execute else None
    try:
        run = await asyncio.to_thread(server.service.retry, run_id, from_step, owner)
    except RetryStepError as error:  # worded for the CLI's flag: say it in the API's words
        worded = str(error).replace("with --from STEP_ID", '(`{"from": STEP_ID}`)')
        raise HttpError(400, "bad_input", worded, "from") from None
    if server.execute:
        server.executor.spawn(run.id, run)
    status = run.status.value if server.execute else "queued"
    step = run.current.instance_id if run.current is not None else None
    return JSONResponse({"run_id": run.id, "status": status, "from": step})


async def resume_run(request: Request) -> JSONResponse:
    """Continue an unfinished run nobody is advancing (its process died, its lease ran out),
    here: recorded as `RunResumed` with this server's claim, like `controlroom resume`."""
    run_id = request.path_params["run_id"]
    await run_in_threadpool(_run_view, request)  # 404 before anything else
    server = _server(request)
    if not server.execute:
        raise HttpError(
            409, "conflict", "this server does not execute runs (--no-execute): a worker resumes it"
        )
    run = await asyncio.to_thread(server.service.load, run_id)
    if run.is_finished or run.is_waiting:
        state = f"waiting on '{run.waiting_on}'" if run.is_waiting else run.status.value
        raise HttpError(409, "conflict", f"run {run_id} is {state}: nothing to resume")
    if run.belongs_elsewhere(server.service.workspace_key):
        raise HttpError(
            409,
            "conflict",
            f"run {run_id} belongs to the workspace {run.workspace}: a server or worker of "
            "that workspace resumes it",
        )
    held = (
        run.owner
        and run.owner != server.executor.owner
        and run.lease_is_live(server.ctx.clock.now())
    )
    if run_id in server.executor.tasks or (held and not owner_is_gone(run.owner)):
        raise HttpError(409, "conflict", f"run {run_id} is being advanced by {run.owner}")
    server.executor.spawn(run_id)
    return JSONResponse({"run_id": run_id, "status": "running"})


def get_request(request: Request) -> JSONResponse:
    """The exact request an agent step sent: `/api/runs/{id}/requests/{step or sha256:ref}`."""
    server = _server(request)
    return JSONResponse(
        server.service.recorded_request(request.path_params["run_id"], request.path_params["ref"])
    )


def get_audit(request: Request) -> JSONResponse:
    """The audit path folds the run's own events, never the projections."""
    run_id = request.path_params["run_id"]
    records = _server(request).ctx.store.stream_records(run_id)
    if not records:
        raise RunNotFoundError(run_id)
    damaged = [r for r in records if isinstance(r, Damaged)]
    if damaged:
        raise HttpError(422, "damaged", f"the run's events cannot all be read: {damaged[0]}")
    events = [r for r in records if isinstance(r, DomainEvent)]
    at = request.query_params.get("at")
    if at is None:
        return _json(AuditTrail.model_validate({"run_id": run_id, "events": audit_trail(events)}))
    last = events[-1].originator_version
    try:
        version = parse_position(at, "at")
    except LimitError:
        version = 0
    if not 1 <= version <= last:
        raise HttpError(400, "bad_version", f"at must be a version from 1 to {last}", "at")
    return _json(RunDetail.model_validate(build_run_view(events, version).consolidated()))


async def run_events(request: Request) -> Any:
    await run_in_threadpool(_run_view, request)
    return run_stream(_server(request), request, request.path_params["run_id"])


async def all_events(request: Request) -> Any:
    return log_stream(_server(request), request)


def list_issues(request: Request) -> JSONResponse:
    return _json(_queries(request).issues(request.query_params.get("run_id")))


async def list_recipes(request: Request) -> JSONResponse:
    catalog = _server(request).ctx.catalog
    return JSONResponse(
        [
            {
                "recipe_id": e.recipe.recipe_id,
                "label": e.recipe.label,
                "task_patterns": e.recipe.task_patterns,
                "total_steps": e.recipe.total_steps,
                "required_args": sorted(e.recipe.required_args()),
                "bundled": e.bundled,
            }
            for e in catalog.entries()
        ]
    )


async def get_recipe(request: Request) -> JSONResponse:
    recipe = _server(request).ctx.catalog.get(request.path_params["recipe_id"])
    return JSONResponse(recipe.snapshot())


async def route_task(request: Request) -> JSONResponse:
    body = await read_body(request, RouteBody)
    # Off the loop: the first routing in a process trains the router's classifier.
    decision = await asyncio.to_thread(_server(request).service.route, body.task)
    return JSONResponse(decision.model_dump(mode="json"))


async def openapi(request: Request) -> JSONResponse:
    return JSONResponse(dashboard.with_dashboard_paths(openapi_document()))


ROUTES = [
    Route("/api/runs", start_run, methods=["POST"]),
    Route("/api/runs", list_runs, methods=["GET"]),
    Route("/api/runs/{run_id}", get_run, methods=["GET"]),
    Route("/api/runs/{run_id}/steps", get_steps, methods=["GET"]),
    Route("/api/runs/{run_id}/cache/{slot}", get_slot, methods=["GET"]),
    Route("/api/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
    Route("/api/runs/{run_id}/retry", retry_run, methods=["POST"]),
    Route("/api/runs/{run_id}/resume", resume_run, methods=["POST"]),
    Route("/api/runs/{run_id}/requests/{ref}", get_request, methods=["GET"]),
    Route("/api/runs/{run_id}/audit", get_audit, methods=["GET"]),
    Route("/api/runs/{run_id}/events", run_events, methods=["GET"]),
    Route("/api/events", all_events, methods=["GET"]),
    Route("/api/issues", list_issues, methods=["GET"]),
    *issues_http.ROUTES,
    Route("/api/recipes", list_recipes, methods=["GET"]),
    Route("/api/recipes/{recipe_id}", get_recipe, methods=["GET"]),
    Route("/api/route", route_task, methods=["POST"]),
    *loops_http.ROUTES,
    *whatif_http.ROUTES,
    Route("/api/analytics/reports", analytics.list_reports, methods=["GET"]),
    Route("/api/analytics/reports/{name}", analytics.get_report, methods=["GET"]),
    Route("/api/analytics/query", analytics.post_query, methods=["POST"]),
    *plans_http.ROUTES,
    *conference_http.ROUTES,
    *status_http.ROUTES,
    Route("/openapi.json", openapi, methods=["GET"]),
    Route(metrics.PATH, metrics.metrics, methods=["GET"]),
    *dashboard.API_ROUTES,
]


class BearerTokenMiddleware:
    """Pure ASGI (no BaseHTTPMiddleware): every request must carry the configured token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token.encode()
        #: `CONTROLROOM_METRICS_OPEN=1`: a scraper that cannot send a token reads /metrics.
        self.metrics_open = metrics.is_open()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        public = dashboard.is_public(scope) or (
            self.metrics_open and scope.get("path") == metrics.PATH
        )
        if scope["type"] == "http" and not public:
            header = dict(scope["headers"]).get(b"authorization", b"")
            scheme, _, given = header.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given, self.token):
                response = JSONResponse(
                    error_body("unauthorized", "a valid bearer token is required"),
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def not_found(request: Request, exc: Exception) -> JSONResponse:
    detail = getattr(exc, "detail", "not found")
    code = getattr(exc, "status_code", 404)
    headers = dict(getattr(exc, "headers", None) or {})
    if code == 405:
        # Every method the path answers: one path may be served by several routes (GET
        # and POST /api/runs), and Starlette names only the first route's.
        allowed = {
            method
            for route in request.app.routes
            if isinstance(route, Route) and route.path_regex.match(request.url.path)
            for method in route.methods or ()
        }
        headers["Allow"] = ", ".join(sorted(allowed))
    return JSONResponse(
        error_body("not_found" if code == 404 else "http_error", str(detail)),
        status_code=code,
        headers=headers,
    )


def create_app(
    ctx: Context,
    token: str | None = None,
    *,
    execute: bool = True,
    hosts: ServedHosts | None = None,
) -> Starlette:
    """The app `serve` runs. `hosts`: the names requests may address, by default those of
    a server on 127.0.0.1 (`ServedHosts.bound_to(serve --host, CONTROLROOM_ALLOWED_HOSTS)`)."""
    server = Server(ctx, execute=execute)
    checkpointer = Checkpointer.from_settings(ctx)  # a bad key is refused before serving

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await server.start()
        if checkpointer is not None:
            checkpointer.start()
        try:
            yield
        finally:
            if checkpointer is not None:
                await checkpointer.stop()
            await server.stop()

    app = Starlette(
        routes=[*ROUTES, *dashboard.PAGE_ROUTES],
        lifespan=lifespan,
        exception_handlers={
            HttpError: handle_http_error,
            ControlRoomError: handle_domain_error,
            **dict.fromkeys(STORE_ERRORS, handle_store_error),
            MapperDeserialisationError: handle_damaged_event,
            404: not_found,
            405: not_found,
        },
    )
    app.state.server = server
    token = token if token is not None else ctx.settings.api_token
    if token:
        app.add_middleware(BearerTokenMiddleware, token=token)
    # Outside the token check: a request for another host, or a change from another
    # site, is refused whether or not it carries the token.
    app.add_middleware(OriginGuard, hosts=hosts or ServedHosts.bound_to("127.0.0.1"))
    app.add_middleware(dashboard.PageHeadersMiddleware)
    return app
