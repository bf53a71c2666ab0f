"""The live web dashboard: static files served by the API itself, no build step, no asset
from anywhere else, and the two reads the page needs that the API lacked (a run's hash-chain
verdict and the log's head position).

The page and its assets are public (they hold no data and no secret): with a token
configured, the page asks for it and sends it on every API call as a bearer header, the live
feeds included (`fetch` streaming, since `EventSource` cannot send headers). A strict
content-security policy forbids inline script and any origin but the server's own.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from controlroom.api.run_page import RunState, get_run_state, get_run_states
from controlroom.domain.errors import RunNotFoundError
from controlroom.projections.audit import uncovered, verify

STATIC = Path(__file__).resolve().parent / "static"
#: Nothing inline, nothing from elsewhere: the page runs only the server's own files.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}
#: Paths any caller may GET without the token: the page shell and its static files.
PUBLIC_PATHS = ("/", "/ui", "/favicon.ico")
PUBLIC_PREFIX = "/static/"


def is_public(scope: Scope) -> bool:
    """A GET of the page or a static asset: served without the bearer token."""
    if scope.get("method") not in ("GET", "HEAD"):
        return False
    path: str = scope.get("path", "")
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIX)


class VerificationProblem(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int
    kind: str = Field(description="changed | missing | reordered | unreadable")
    message: str


class UncoveredEvents(BaseModel):
    """Events no signed checkpoint covers: consistent with their chain, proven by nothing."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    first_version: int
    last_version: int
    last_type: str = Field(description="the last event's type (RunCompleted: the outcome)")
    outcome_unproven: bool = Field(description="true when the run's ending event is among them")
    message: str


class Verification(BaseModel):
    """`GET /api/runs/{id}/verify`: the run's stored events checked against their hash
    chain, as `controlroom replay --verify` checks them. Anyone who can write to the store
    can compute that chain, so the answer also names the events it cannot prove."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    verified: bool = Field(description="true when no event was changed, lost or reordered")
    events: int = Field(description="how many stored events were checked")
    problems: list[VerificationProblem] = Field(description="the first problem comes first")
    not_covered: UncoveredEvents | None = Field(
        description="the events no checkpoint covers (this check reads none: all of them); "
        "`controlroom replay RUN --verify --checkpoint FILE --public-key FILE` proves the "
        "events a checkpoint covers"
    )


class LogHead(BaseModel):
    """`GET /api/log/head`: the last position of the event log, where a live feed that
    wants only what happens next resumes (`?after=`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    position: int


def verify_run(request: Request) -> JSONResponse:
    """Blocking reads of the store: a plain function, so Starlette runs it in a thread."""
    run_id = request.path_params["run_id"]
    store = request.app.state.server.ctx.store
    stored = store.recorder.select_events(run_id)
    if not stored:
        raise RunNotFoundError(run_id)
    problems = verify(store, run_id)
    tail = uncovered(store, run_id)
    result = Verification(
        run_id=run_id,
        verified=not problems,
        events=len(stored),
        problems=[
            VerificationProblem(version=p.version, kind=p.kind, message=p.message) for p in problems
        ],
        not_covered=None
        if tail is None
        else UncoveredEvents(
            first_version=tail.first_version,
            last_version=tail.last_version,
            last_type=tail.last_type,
            outcome_unproven=tail.outcome_unproven,
            message=tail.describe(),
        ),
    )
    return JSONResponse(result.model_dump(mode="json"))


def log_head(request: Request) -> JSONResponse:
    position: int = request.app.state.server.ctx.store.max_position()
    return JSONResponse(LogHead(position=position).model_dump(mode="json"))


async def page(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)


async def to_page(request: Request) -> Response:
    return RedirectResponse("/", status_code=308)


async def favicon(request: Request) -> Response:
    return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml", headers=PAGE_HEADERS)


#: The dashboard's reads, described in the OpenAPI document like every other endpoint.
API_ROUTES = [
    Route("/api/runs/{run_id}/verify", verify_run, methods=["GET"]),
    Route("/api/runs/{run_id}/state", get_run_state, methods=["GET"]),
    Route("/api/run-states", get_run_states, methods=["GET"]),
    Route("/api/log/head", log_head, methods=["GET"]),
]
#: The page itself: not part of the API.
PAGE_ROUTES = [
    Route("/", page, methods=["GET"]),
    Route("/ui", to_page, methods=["GET"]),
    Route("/favicon.ico", favicon, methods=["GET"]),
    Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
]


class PageHeadersMiddleware:
    """Pure ASGI: the security headers on every page and static response (not on the API's
    JSON and streams, which a browser never renders as a document)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "") if scope["type"] == "http" else ""
        if not path or path.startswith("/api/") or path == "/openapi.json":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if k.decode("latin-1").lower() not in _PAGE_HEADER_NAMES
                ]
                headers += [(k.lower().encode(), v.encode()) for k, v in PAGE_HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


_PAGE_HEADER_NAMES = {name.lower() for name in PAGE_HEADERS}


def with_dashboard_paths(document: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI document with the dashboard's API endpoints added (a new dict: the
    document it is given may be cached and shared)."""
    document = copy.deepcopy(document)
    schemas = document.setdefault("components", {}).setdefault("schemas", {})

    def ok(model: type[BaseModel], description: str) -> dict[str, Any]:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
        ref = {"$ref": f"#/components/schemas/{model.__name__}"}
        return {"description": description, "content": {"application/json": {"schema": ref}}}

    def error(description: str) -> dict[str, Any]:
        ref = {"$ref": "#/components/schemas/Error"}
        return {"description": description, "content": {"application/json": {"schema": ref}}}

    run_id = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}
    paths = {
        "/api/runs/{run_id}/verify": {
            "get": {
                "summary": "Check a run's stored events against their hash chain",
                "operationId": "VerifyRun",
                "parameters": [run_id],
                "responses": {
                    "200": ok(Verification, "the verdict"),
                    "401": error("missing or wrong bearer token"),
                    "404": error("not found"),
                },
            }
        },
        "/api/runs/{run_id}/state": {
            "get": {
                "summary": "What the run page says about a run: its shown state and actions",
                "operationId": "GetRunState",
                "parameters": [run_id],
                "responses": {
                    "200": ok(RunState, "the run as the page shows it"),
                    "401": error("missing or wrong bearer token"),
                    "404": error("not found"),
                },
            }
        },
        "/api/run-states": {
            "get": {
                "summary": "The page's word on several runs at once (a page of the runs list)",
                "operationId": "GetRunStates",
                "parameters": [
                    {
                        "name": "ids",
                        "in": "query",
                        "required": False,
                        "description": "run ids, comma-separated (at most 100)",
                        "schema": {"type": "string"},
                    }
                ],
                "responses": {
                    "200": {
                        "description": "the runs that exist, in the order asked",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "array",
                                    "items": {"$ref": "#/components/schemas/RunState"},
                                }
                            }
                        },
                    },
                    "400": error("more than 100 ids"),
                    "401": error("missing or wrong bearer token"),
                },
            }
        },
        "/api/log/head": {
            "get": {
                "summary": "The event log's last position",
                "operationId": "GetLogHead",
                "responses": {
                    "200": ok(LogHead, "the head"),
                    "401": error("missing or wrong bearer token"),
                },
            }
        },
    }
    document["paths"].update(paths)
    created = document["paths"].get("/api/runs", {}).get("post", {}).get("responses", {})
    links = created.get("201", {}).get("links")
    if links is not None:  # a stateful fuzzer verifies the run it started, too
        links["VerifyRun"] = {
            "operationId": "VerifyRun",
            "parameters": {"run_id": "$response.body#/run_id"},
        }
    return document
