"""Session plans over HTTP: `/api/plans`, one route per user control, and a live feed.

Controls answer with the plan's view after the change (the same typed view as GET). The
feed `/api/plans/{plan_id}/events` carries the plan's events and its runs' events, resumes
after `Last-Event-ID`, and ends with the plan's `PlanFinished`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from controlroom.api.bodies import read_body
from controlroom.api.errors import HttpError
from controlroom.api.fields import Note, TaskNumber, Text
from controlroom.api.history import stream_page
from controlroom.api.limits import MAX_ITEMS
from controlroom.api.server import Server
from controlroom.api.sse import follow, resume_position, stream
from controlroom.domain.plan import SessionPlan, plan_run_id
from controlroom.domain.plan_errors import ChiefUnavailableError
from controlroom.domain.plan_events import PlanFinished, TaskRunRequested
from controlroom.engine.plans import PlanService
from controlroom.eventstore.store import Positioned
from controlroom.projections.plan_models import PlanDetail
from controlroom.projections.plan_queries import PLAN_STATUSES


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        if isinstance(value, str) and "\x00" in value:
            raise ValueError("contains a NUL character")
        return value


class CreatePlanBody(_Body):
    intent: Text = Field(description="what you want done")


class PauseBody(_Body):
    reason: Note = ""


class TaskBody(_Body):
    task_id: TaskNumber


class AnswerBody(TaskBody):
    answer: Text = Field(description="a choice's number or text, or words")


class EditBody(TaskBody):
    description: Text


class RemoveBody(TaskBody):
    cascade: bool = Field(default=False, description="also remove the tasks that need it")


class ReorderBody(_Body):
    order: list[int] = Field(min_length=1, max_length=MAX_ITEMS)


def _server(request: Request) -> Server:
    server: Server = request.app.state.server
    return server


def _detail(request: Request, plan_id: str) -> JSONResponse:
    detail = _server(request).read_views().plans.plan(plan_id)
    return JSONResponse(detail.model_dump(mode="json"))


async def create_plan(request: Request) -> JSONResponse:
    body = await read_body(request, CreatePlanBody)
    try:
        plan = await PlanService(_server(request).ctx).create(body.intent)
    except ChiefUnavailableError as exc:
        # The Chief's model server failed (after the engine's retries): a bad gateway.
        raise HttpError(502, "model_unavailable", str(exc)) from exc
    response = await run_in_threadpool(_detail, request, plan.id)
    response.status_code = 201
    return response


def list_plans(request: Request) -> JSONResponse:
    status = request.query_params.get("status")
    if status is not None and status not in PLAN_STATUSES:
        raise HttpError(
            400, "bad_filter", f"status must be one of {', '.join(PLAN_STATUSES)}", "status"
        )
    rows = _server(request).read_views().plans.plans(status)
    return JSONResponse([r.model_dump(mode="json") for r in rows])


def get_plan(request: Request) -> JSONResponse:
    return _detail(request, request.path_params["plan_id"])


Control = Callable[[PlanService, str, Any], object]


def _control(
    body_type: type[_Body] | None, control: Control
) -> Callable[[Request], Awaitable[JSONResponse]]:
    async def endpoint(request: Request) -> JSONResponse:
        plan_id = request.path_params["plan_id"]
        body = await read_body(request, body_type) if body_type is not None else None
        service = PlanService(_server(request).ctx)
        await run_in_threadpool(service.load, plan_id)  # 404 before the body is used
        await run_in_threadpool(control, service, plan_id, body)
        return await run_in_threadpool(_detail, request, plan_id)

    return endpoint


approve = _control(None, lambda s, p, b: s.approve(p))
start = _control(None, lambda s, p, b: s.start(p))
pause = _control(PauseBody, lambda s, p, b: s.pause(p, b.reason))
resume = _control(None, lambda s, p, b: s.resume(p))
answer = _control(AnswerBody, lambda s, p, b: s.answer(p, b.task_id, b.answer))
force_start = _control(TaskBody, lambda s, p, b: s.force_start(p, b.task_id))
reorder = _control(ReorderBody, lambda s, p, b: s.reorder(p, b.order))
remove = _control(RemoveBody, lambda s, p, b: s.remove(p, b.task_id, cascade=b.cascade))
edit = _control(EditBody, lambda s, p, b: s.edit(p, b.task_id, b.description))


async def plan_events(request: Request) -> Any:
    server = _server(request)
    plan_id = request.path_params["plan_id"]
    plan = await run_in_threadpool(PlanService(server.ctx).load, plan_id)
    after = resume_position(request)
    # The runs known now; a task added later, or a task run once more, is asked for by a
    # plan event (`TaskRunRequested`) before its run's first event: followed from there.
    runs = {plan_run_id(plan_id, task_id) for task_id in plan.tasks} | set(plan.run_ids.values())

    def wanted(item: Positioned) -> bool:
        event = item.event
        if event.originator_id == plan_id and isinstance(event, TaskRunRequested):
            runs.add(event.run_id)
        return event.originator_id == plan_id or event.originator_id in runs

    def ends(item: Positioned) -> bool:
        return item.event.originator_id == plan_id and isinstance(item.event, PlanFinished)

    async def feed() -> AsyncIterator[bytes]:
        if plan.is_finished and not await run_in_threadpool(_finishes_after, server, plan, after):
            return  # the client has seen the end already
        async for message in follow(server, after, wanted, ends, lambda run: run in runs):
            yield message

    return stream(feed(), server.ctx.settings.sse_ping_s)


def _finishes_after(server: Server, plan: SessionPlan, after: int) -> bool:
    page = stream_page(server.ctx.store, plan.id, after)
    return any(isinstance(item.event, PlanFinished) for item in page)


ROUTES = [
    Route("/api/plans", create_plan, methods=["POST"]),
    Route("/api/plans", list_plans, methods=["GET"]),
    Route("/api/plans/{plan_id}", get_plan, methods=["GET"]),
    Route("/api/plans/{plan_id}/approve", approve, methods=["POST"]),
    Route("/api/plans/{plan_id}/start", start, methods=["POST"]),
    Route("/api/plans/{plan_id}/pause", pause, methods=["POST"]),
    Route("/api/plans/{plan_id}/resume", resume, methods=["POST"]),
    Route("/api/plans/{plan_id}/answer", answer, methods=["POST"]),
    Route("/api/plans/{plan_id}/force-start", force_start, methods=["POST"]),
    Route("/api/plans/{plan_id}/reorder", reorder, methods=["POST"]),
    Route("/api/plans/{plan_id}/remove", remove, methods=["POST"]),
    Route("/api/plans/{plan_id}/edit", edit, methods=["POST"]),
    Route("/api/plans/{plan_id}/events", plan_events, methods=["GET"]),
]

#: For the OpenAPI document: each control's body model (None: no body).
CONTROL_BODIES: dict[str, type[BaseModel] | None] = {
    "approve": None,
    "start": None,
    "pause": PauseBody,
    "resume": None,
    "answer": AnswerBody,
    "force-start": TaskBody,
    "reorder": ReorderBody,
    "remove": RemoveBody,
    "edit": EditBody,
}
__all__ = ["CONTROL_BODIES", "ROUTES", "CreatePlanBody", "PlanDetail"]
