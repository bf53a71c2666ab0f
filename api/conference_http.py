"""Conference rounds over HTTP: `/api/conferences`, and a live feed per round."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from controlroom.api.bodies import read_body
from controlroom.api.conference_args import DEFAULT_ROLES
from controlroom.api.fields import Text
from controlroom.api.history import stream_page
from controlroom.api.limits import MAX_ID, MAX_ROLES, MAX_TOOLS
from controlroom.api.server import Server
from controlroom.api.sse import follow, resume_position, stream
from controlroom.domain.conference import RoundClosed, RoundFailed
from controlroom.domain.run_events import RunOrigin
from controlroom.engine.conference import ConferenceService, RoundRequest
from controlroom.engine.conference_step import RECIPE_ID
from controlroom.engine.service import RunRequest
from controlroom.eventstore.store import Positioned

_ENDS = (RoundClosed, RoundFailed)


class StartRoundBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: Text
    roles: list[str] = Field(
        default_factory=lambda: DEFAULT_ROLES.split(","), min_length=1, max_length=MAX_ROLES
    )
    allowed_tools: list[str] = Field(default_factory=list, max_length=MAX_TOOLS)
    require_tool: bool = False

    @field_validator("question")
    @classmethod
    def _text(cls, value: str) -> str:
        if "\x00" in value or not value.strip():
            raise ValueError("must be text, not blank, without NUL")
        return value

    @field_validator("roles", "allowed_tools")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name.strip() or len(name) > MAX_ID or "\x00" in name:
                raise ValueError(f"each name is 1-{MAX_ID} characters of text")
        if len(set(value)) != len(value):
            raise ValueError("names one twice")
        return value


def _server(request: Request) -> Server:
    server: Server = request.app.state.server
    return server


def _detail(request: Request, round_id: str) -> JSONResponse:
    detail = _server(request).read_views().conferences.round(round_id)
    return JSONResponse(detail.model_dump(mode="json"))


async def start_round(request: Request) -> JSONResponse:
    """Start a round and answer at once (202): the round is a run of the `conference_round`
    recipe, executed by this server's executor (or a worker, under `serve --no-execute`),
    resumable like any run. It is opened here, so `GET /api/conferences/{round_id}` and its
    live feed work from the first moment; a bad request (an unknown tool, a role that cannot
    be served) is a 400 before anything is recorded."""
    body = await read_body(request, StartRoundBody)
    server = _server(request)
    wanted = RoundRequest(body.question, body.roles, body.allowed_tools, body.require_tool)
    service = ConferenceService(server.ctx)
    round_id = server.ctx.ids.new("conf")
    conference = await run_in_threadpool(service.open, wanted, round_id)
    await run_in_threadpool(server.ctx.store.save, conference)
    run = await server.start_run(
        RunRequest(
            RECIPE_ID,
            {
                "roles": list(wanted.roles),
                "allowed_tools": list(wanted.allowed_tools),
                "require_tool": wanted.require_tool,
                "round_id": round_id,
            },
            description=wanted.question,
            is_recipe_id=True,
            origin=RunOrigin(kind="user", via="http"),
        )
    )
    status = run.status.value if server.execute else "queued"
    return JSONResponse(
        {"round_id": round_id, "run_id": run.id, "status": "open", "run_status": status},
        status_code=202,
    )


def list_rounds(request: Request) -> JSONResponse:
    rows = _server(request).read_views().conferences.rounds()
    return JSONResponse([r.model_dump(mode="json") for r in rows])


def get_round(request: Request) -> JSONResponse:
    return _detail(request, request.path_params["round_id"])


async def round_events(request: Request) -> Any:
    server = _server(request)
    round_id = request.path_params["round_id"]
    await run_in_threadpool(_detail, request, round_id)  # 404 for an unknown round
    after = resume_position(request)

    def wanted(item: Positioned) -> bool:
        return bool(item.event.originator_id == round_id)

    def ends(item: Positioned) -> bool:
        return wanted(item) and isinstance(item.event, _ENDS)

    async def feed() -> AsyncIterator[bytes]:
        page = await run_in_threadpool(stream_page, server.ctx.store, round_id, 0)
        ended = any(isinstance(i.event, _ENDS) for i in page)
        if ended and not any(isinstance(i.event, _ENDS) and i.position > after for i in page):
            return  # the client has seen the end already
        async for message in follow(server, after, wanted, ends):
            yield message

    return stream(feed(), server.ctx.settings.sse_ping_s)


ROUTES = [
    Route("/api/conferences", start_round, methods=["POST"]),
    Route("/api/conferences", list_rounds, methods=["GET"]),
    Route("/api/conferences/{round_id}", get_round, methods=["GET"]),
    Route("/api/conferences/{round_id}/events", round_events, methods=["GET"]),
]
