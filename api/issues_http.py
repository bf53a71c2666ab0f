"""The issue lifecycle over HTTP: close, reopen, comment (each an event), one issue with its
audit trail, and a receipt's full report on demand."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from controlroom.api.bodies import read_body
from controlroom.api.fields import Text
from controlroom.api.server import Server
from controlroom.engine.issues import IssueService


class _Note(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if "\x00" in value:
            raise ValueError("contains a NUL character")
        if not value.strip():
            raise ValueError("is blank")
        return value


class ReasonBody(_Note):
    reason: Text


class CommentBody(_Note):
    text: Text


class AnswerBody(_Note):
    resolution: Text
    #: The model the step runs on next (`provider:model`); its ladder's strongest if unset.
    model: str | None = None


def _server(request: Request) -> Server:
    server: Server = request.app.state.server
    return server


def _detail(request: Request, issue_id: str) -> JSONResponse:
    detail = _server(request).read_views().query.issue_detail(issue_id)
    return JSONResponse(detail.model_dump(mode="json"))


def get_issue(request: Request) -> JSONResponse:
    return _detail(request, request.path_params["issue_id"])


def get_run_trail(request: Request) -> JSONResponse:
    trail = _server(request).read_views().query.run_trail(request.path_params["run_id"])
    return JSONResponse([e.model_dump(mode="json") for e in trail])


def get_report(request: Request) -> JSONResponse:
    issue_id, receipt_id = request.path_params["issue_id"], request.path_params["receipt_id"]
    report = _server(request).read_views().query.receipt_report(issue_id, receipt_id)
    return JSONResponse({"issue_id": issue_id, "receipt_id": receipt_id, "report": report})


async def close_issue(request: Request) -> JSONResponse:
    body = await read_body(request, ReasonBody)
    issue_id = request.path_params["issue_id"]
    await run_in_threadpool(IssueService(_server(request).ctx).close, issue_id, body.reason)
    return await run_in_threadpool(_detail, request, issue_id)


async def reopen_issue(request: Request) -> JSONResponse:
    body = await read_body(request, ReasonBody)
    issue_id = request.path_params["issue_id"]
    await run_in_threadpool(IssueService(_server(request).ctx).reopen, issue_id, body.reason)
    return await run_in_threadpool(_detail, request, issue_id)


async def comment_issue(request: Request) -> JSONResponse:
    body = await read_body(request, CommentBody)
    issue_id = request.path_params["issue_id"]
    await run_in_threadpool(IssueService(_server(request).ctx).comment, issue_id, body.text)
    response = await run_in_threadpool(_detail, request, issue_id)
    response.status_code = 201
    return response


async def answer_issue(request: Request) -> JSONResponse:
    """A person's resolution for a `needs_human` issue: the policy hands it to the waiting
    run, and this server continues the run (a worker does, under --no-execute)."""
    body = await read_body(request, AnswerBody)
    issue_id = request.path_params["issue_id"]
    server = _server(request)

    def answer() -> str | None:
        issue = IssueService(server.ctx).answer(issue_id, body.resolution, model=body.model)
        server.followers.catch_up()  # the answer reaches the run before it is continued
        return issue.run_id

    run_id = await run_in_threadpool(answer)
    if run_id is not None and server.execute:
        server.executor.spawn(run_id)
    response = await run_in_threadpool(_detail, request, issue_id)
    return response


ROUTES = [
    Route("/api/runs/{run_id}/trail", get_run_trail, methods=["GET"]),
    Route("/api/issues/{issue_id}", get_issue, methods=["GET"]),
    Route("/api/issues/{issue_id}/reports/{receipt_id}", get_report, methods=["GET"]),
    Route("/api/issues/{issue_id}/close", close_issue, methods=["POST"]),
    Route("/api/issues/{issue_id}/reopen", reopen_issue, methods=["POST"]),
    Route("/api/issues/{issue_id}/comments", comment_issue, methods=["POST"]),
    Route("/api/issues/{issue_id}/answer", answer_issue, methods=["POST"]),
]
