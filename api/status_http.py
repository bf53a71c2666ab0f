"""The pipelines' status over HTTP: `/api/pipelines` (every target), `/api/pipelines/{id}`
(one: its current iteration's phases, blockers, escalations, history, the STATUS.md
export), `/api/pipelines/status.md` (STATUS.md as the export writes it), and a live feed.

The feed `/api/pipelines/{id}/events` carries every event that changes the target's status:
its runs' events (the runs it has, and any started on it while the feed is open), its
`IterationArchived`, and the STATUS.md export's events. It resumes after `Last-Event-ID`
and never ends (the next iteration is the same pipeline's). `/api/events?type=...` carries
the same events for every target (RunStarted, StepStarted, StepCompleted, StepFailed,
StepWaiting, HumanAnswered, FlowDecided, RunRetried, RunCompleted, RunFailed, RunCancelled,
IterationArchived, StatusExported, StatusExportFailed).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from controlroom.api.server import Server
from controlroom.api.sse import follow, resume_position, stream
from controlroom.domain.iteration import iteration_id, target_of
from controlroom.domain.run_events import RunStarted
from controlroom.domain.status_report import STATUS_PATH, status_report_id
from controlroom.eventstore.store import Positioned
from controlroom.projections.status_markdown import render_status


def _server(request: Request) -> Server:
    server: Server = request.app.state.server
    return server


def list_pipelines(request: Request) -> JSONResponse:
    rows = _server(request).read_views().pipelines.pipelines()
    return JSONResponse([r.model_dump(mode="json") for r in rows])


def get_pipeline(request: Request) -> JSONResponse:
    detail = _server(request).read_views().pipelines.pipeline(request.path_params["target_id"])
    return JSONResponse(detail.model_dump(mode="json"))


def status_markdown(request: Request) -> Response:
    position, details = _server(request).read_views().pipelines.snapshot()
    return Response(render_status(details, position), media_type="text/markdown; charset=utf-8")


def _runs_of(server: Server, target_id: str) -> set[str]:
    return server.read_views().pipelines.run_ids(target_id)  # 404 for an unknown target


async def pipeline_events(request: Request) -> Any:
    server = _server(request)
    target_id = request.path_params["target_id"]
    runs = await run_in_threadpool(_runs_of, server, target_id)
    after = resume_position(request)
    report_id = status_report_id(STATUS_PATH)

    def wanted(item: Positioned) -> bool:
        event = item.event
        if event.originator_id in (target_id, report_id) or event.originator_id in runs:
            return True
        if isinstance(event, RunStarted) and event.recipe.get("iteration") is not None:
            spec = event.recipe["iteration"]
            keys = list(spec.get("key_args") or []) if isinstance(spec, dict) else []
            if iteration_id(target_of(event.recipe_id, keys, event.task.args)) == target_id:
                runs.add(event.originator_id)  # a new iteration of this target
                return True
        return False

    async def feed() -> AsyncIterator[bytes]:
        async for message in follow(server, after, wanted, lambda _: False, lambda r: False):
            yield message

    return stream(feed(), server.ctx.settings.sse_ping_s)


ROUTES = [
    Route("/api/pipelines", list_pipelines, methods=["GET"]),
    Route("/api/pipelines/status.md", status_markdown, methods=["GET"]),
    Route("/api/pipelines/{target_id}", get_pipeline, methods=["GET"]),
    Route("/api/pipelines/{target_id}/events", pipeline_events, methods=["GET"]),
]
