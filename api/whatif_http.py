"""The "what if" commands over HTTP (issue 31): `POST /api/runs/{run_id}/fork` and
`GET /api/runs/{run_id}/diff/{other_run_id}`, what `controlroom fork` and `controlroom
diff --json` do. A fork names its changes in the body: template texts by prompt type,
models by role, args."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from controlroom.api.errors import HttpError
from controlroom.api.server import Server
from controlroom.domain.errors import RunNotFoundError

#: The most text one fork may bring (every replaced template together).
MAX_FORK_TEXT = 200_000


def _server(request: Request) -> Server:
    server: Server = request.app.state.server
    return server


def _strings(body: dict[str, Any], name: str) -> dict[str, str]:
    value = body.get(name) or {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and k.strip() and isinstance(v, str) for k, v in value.items()
    ):
        raise HttpError(400, "bad_field", f"{name} must be an object of strings", name)
    return dict(value)


def _fork_request(run_id: str, raw: bytes) -> Any:
    from controlroom.engine.fork import ForkRequest

    try:
        body = json.loads(raw) if raw.strip() else None
    except ValueError:
        raise HttpError(400, "bad_json", "the body is not valid JSON", "body") from None
    if not isinstance(body, dict):
        raise HttpError(400, "bad_body", 'the body must be an object with "from"', "body")
    unknown = sorted(set(body) - {"from", "prompts", "models", "args"})
    if unknown:
        raise HttpError(400, "bad_field", f"unknown field(s): {', '.join(unknown)}", unknown[0])
    step = body.get("from")
    if not isinstance(step, str) or not step.strip():
        raise HttpError(400, "bad_field", "from must name a step the run started", "from")
    prompts = _strings(body, "prompts")
    if sum(len(text) for text in prompts.values()) > MAX_FORK_TEXT:
        raise HttpError(400, "bad_field", f"prompts hold over {MAX_FORK_TEXT} chars", "prompts")
    args = body.get("args") or {}
    if not isinstance(args, dict):
        raise HttpError(400, "bad_field", "args must be an object", "args")
    return ForkRequest(
        source_run_id=run_id,
        from_step=step,
        models=_strings(body, "models"),
        args=args,
        prompt_texts=prompts,
    )


async def fork_run(request: Request) -> JSONResponse:
    """A new run with the source's steps before `from` copied and the rest run live."""
    from controlroom.engine.fork import begin_fork
    from controlroom.engine.runner import StepRunner

    run_id = request.path_params["run_id"]
    server = _server(request)
    if await run_in_threadpool(server.read_views().query.run_status, run_id) is None:
        raise RunNotFoundError(run_id)
    fork_request = _fork_request(run_id, await request.body())

    def record() -> Any:
        for choice in fork_request.models.values():
            server.ctx.agents.check_model(choice)
        run = begin_fork(server.ctx, fork_request)
        StepRunner(server.ctx).save(run)
        return run

    run = await asyncio.to_thread(record)
    if server.execute:
        server.executor.spawn(run.id, run)
    return JSONResponse(
        {
            "run_id": run.id,
            "status": run.status.value if server.execute else "queued",
            "source_run_id": run_id,
            "from": fork_request.from_step,
        }
    )


async def diff_runs(request: Request) -> JSONResponse:
    """Two runs compared step by step (`controlroom diff --json`)."""
    from controlroom.engine.run_diff import diff_runs as compare
    from controlroom.engine.service import RunService

    server = _server(request)
    run_a, run_b = request.path_params["run_id"], request.path_params["other_run_id"]
    for run_id in (run_a, run_b):
        if await run_in_threadpool(server.read_views().query.run_status, run_id) is None:
            raise RunNotFoundError(run_id)
    found = await run_in_threadpool(compare, RunService(server.ctx), run_a, run_b)
    return JSONResponse(found.to_json())


ROUTES = [
    Route("/api/runs/{run_id}/fork", fork_run, methods=["POST"]),
    Route("/api/runs/{run_id}/diff/{other_run_id}", diff_runs, methods=["GET"]),
]
