"""The HTTP API (appendix D and the read side), built from explicit routes and a lifespan."""

from __future__ import annotations

import hmac
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from controlroom.api.bodies import RouteBody, StartRunBody, read_body
from controlroom.api.errors import HttpError, error_body, handle_domain_error, handle_http_error
from controlroom.api.openapi import openapi_document
from controlroom.api.server import Server
from controlroom.api.sse import log_stream, run_stream
from controlroom.domain.errors import ControlRoomError, IssueNotFoundError, RunNotFoundError
from controlroom.engine.context import Context
from controlroom.engine.service import RunRequest
from controlroom.projections.audit import audit_trail, replay
from controlroom.projections.run_view import RunView

TOKEN_VAR = "CONTROLROOM_API_TOKEN"
RUN_STATUSES = ("pending", "running", "done", "failed", "cancelled")


def _server(request: Request) -> Server:
    server: Server = request.app.state.server
    return server


def _run_view(request: Request) -> RunView:
    run_id = request.path_params["run_id"]
    view = _server(request).read_views().run(run_id)
    if view is None:
        raise RunNotFoundError(run_id)
    return view


async def start_run(request: Request) -> JSONResponse:
    body = await read_body(request, StartRunBody)
    task = body.recipe_id or body.task or ""
    run = _server(request).start_run(
        RunRequest(
            task,
            body.args,
            session_id=body.session_id,
            description=body.task if body.recipe_id else None,
            is_recipe_id=body.recipe_id is not None,
        )
    )
    return JSONResponse({"run_id": run.id, "status": run.status.value}, status_code=201)


async def list_runs(request: Request) -> JSONResponse:
    status = request.query_params.get("status")
    if status is not None and status not in RUN_STATUSES:
        raise HttpError(
            400, "bad_filter", f"status must be one of {', '.join(RUN_STATUSES)}", "status"
        )
    rows = _server(request).read_views().runs(status, request.query_params.get("recipe_id"))
    return JSONResponse(rows)


async def get_run(request: Request) -> JSONResponse:
    return JSONResponse(_run_view(request).consolidated())


async def get_steps(request: Request) -> JSONResponse:
    return JSONResponse(_run_view(request).step_log())


async def get_slot(request: Request) -> JSONResponse:
    slot = request.path_params["slot"]
    found = _run_view(request).slot(slot)
    if found is None:
        raise HttpError(404, "not_found", f"run has no slot '{slot}'", "slot")
    return JSONResponse(found)


async def cancel_run(request: Request) -> JSONResponse:
    run_id = request.path_params["run_id"]
    _run_view(request)  # 404 before anything else
    run = _server(request).cancel(run_id)
    return JSONResponse({"run_id": run.id, "status": run.status.value})


async def get_audit(request: Request) -> JSONResponse:
    run_id = request.path_params["run_id"]
    store = _server(request).ctx.store
    events = store.stream(run_id)
    if not events:
        raise RunNotFoundError(run_id)
    at = request.query_params.get("at")
    if at is None:
        return JSONResponse({"run_id": run_id, "events": audit_trail(events)})
    if not at.isdigit() or not 1 <= int(at) <= len(events):
        raise HttpError(400, "bad_version", f"at must be a version from 1 to {len(events)}", "at")
    return JSONResponse(replay(store, run_id, int(at)).consolidated())


async def run_events(request: Request) -> Any:
    _run_view(request)
    return run_stream(_server(request), request, request.path_params["run_id"])


async def all_events(request: Request) -> Any:
    return log_stream(_server(request), request)


async def list_issues(request: Request) -> JSONResponse:
    return JSONResponse(_server(request).read_views().issues(request.query_params.get("run_id")))


async def get_issue(request: Request) -> JSONResponse:
    issue_id = request.path_params["issue_id"]
    issue = _server(request).read_views().issue(issue_id)
    if issue is None:
        raise IssueNotFoundError(issue_id)
    return JSONResponse(issue)


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
    return JSONResponse(_server(request).service.route(body.task).model_dump(mode="json"))


async def openapi(request: Request) -> JSONResponse:
    return JSONResponse(openapi_document())


ROUTES = [
    Route("/api/runs", start_run, methods=["POST"]),
    Route("/api/runs", list_runs, methods=["GET"]),
    Route("/api/runs/{run_id}", get_run, methods=["GET"]),
    Route("/api/runs/{run_id}/steps", get_steps, methods=["GET"]),
    Route("/api/runs/{run_id}/cache/{slot}", get_slot, methods=["GET"]),
    Route("/api/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
    Route("/api/runs/{run_id}/audit", get_audit, methods=["GET"]),
    Route("/api/runs/{run_id}/events", run_events, methods=["GET"]),
    Route("/api/events", all_events, methods=["GET"]),
    Route("/api/issues", list_issues, methods=["GET"]),
    Route("/api/issues/{issue_id}", get_issue, methods=["GET"]),
    Route("/api/recipes", list_recipes, methods=["GET"]),
    Route("/api/recipes/{recipe_id}", get_recipe, methods=["GET"]),
    Route("/api/route", route_task, methods=["POST"]),
    Route("/openapi.json", openapi, methods=["GET"]),
]


class BearerTokenMiddleware:
    """Pure ASGI (no BaseHTTPMiddleware): every request must carry the configured token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
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
    return JSONResponse(
        error_body("not_found" if code == 404 else "http_error", str(detail)), status_code=code
    )


def create_app(ctx: Context, token: str | None = None) -> Starlette:
    server = Server(ctx)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await server.start()
        try:
            yield
        finally:
            await server.stop()

    app = Starlette(
        routes=ROUTES,
        lifespan=lifespan,
        exception_handlers={
            HttpError: handle_http_error,
            ControlRoomError: handle_domain_error,
            404: not_found,
            405: not_found,
        },
    )
    app.state.server = server
    token = token if token is not None else os.environ.get(TOKEN_VAR) or None
    if token:
        app.add_middleware(BearerTokenMiddleware, token=token)
    return app
