"""Local servers that speak the OpenAI chat-completions and Anthropic messages APIs.

Each request takes the next behaviour from a script (the last one repeats): `ok`, `429`,
`500`, `hang`, `malformed`, `length`, `empty`. Every request is kept for inspection.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.live import serve_app

REPLY = "Kael waited on the wall. The bell was silent, and the tunnel door stood open."


@dataclass
class Script:
    behaviours: list[str]
    requests: list[dict[str, Any]] = field(default_factory=list)

    def next(self) -> str:
        index = min(len(self.requests) - 1, len(self.behaviours) - 1)
        return self.behaviours[index]


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> AsyncIterator[bytes]:
    async def body() -> AsyncIterator[bytes]:
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            yield ((f"event: {name}\n" if name else "") + f"data: {text}\n\n").encode()
            await asyncio.sleep(0)

    return body()


def _failure(behaviour: str, request: Request) -> Response | None:
    if behaviour == "429":
        return JSONResponse(
            {"error": {"message": "slow down", "type": "rate_limit"}},
            status_code=429,
            headers={"retry-after": "0"},
        )
    if behaviour == "500":
        # Like servers that echo a bad key back, so scrubbing is put to the test.
        credential = request.headers.get("authorization") or request.headers.get("x-api-key")
        return JSONResponse(
            {"error": {"message": f"boom for {credential}", "type": "server_error"}},
            status_code=500,
        )
    return None


def openai_app(script: Script) -> Starlette:
    async def completions(request: Request) -> Response:
        body = await request.json()
        script.requests.append({"headers": dict(request.headers), "body": body})
        behaviour = script.next()
        if behaviour == "hang":
            await asyncio.sleep(3600)
        failure = _failure(behaviour, request)
        if failure is not None:
            return failure
        model = body["model"]
        if behaviour == "malformed":
            return StreamingResponse(_sse([(None, "{not json")]), media_type="text/event-stream")
        words = [] if behaviour == "empty" else [w + " " for w in REPLY.split()]
        finish = "length" if behaviour == "length" else "stop"

        def chunk(delta: dict[str, Any], reason: str | None) -> dict[str, Any]:
            return {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
            }

        events: list[tuple[str | None, dict[str, Any] | str]] = [
            (None, chunk({"role": "assistant", "content": w}, None)) for w in words
        ]
        events.append((None, chunk({}, finish)))
        events.append(
            (
                None,
                {
                    "id": "c1",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [],
                    "usage": {"prompt_tokens": 321, "completion_tokens": 17, "total_tokens": 338},
                },
            )
        )
        events.append((None, "[DONE]"))
        return StreamingResponse(_sse(events), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


def anthropic_app(script: Script) -> Starlette:
    async def messages(request: Request) -> Response:
        body = await request.json()
        script.requests.append({"headers": dict(request.headers), "body": body})
        behaviour = script.next()
        if behaviour == "hang":
            await asyncio.sleep(3600)
        failure = _failure(behaviour, request)
        if failure is not None:
            return failure
        if behaviour == "malformed":
            return StreamingResponse(
                _sse([("message_start", "{not json")]), media_type="text/event-stream"
            )
        model = body["model"]
        words = [] if behaviour == "empty" else [w + " " for w in REPLY.split()]
        stop = "max_tokens" if behaviour == "length" else "end_turn"
        events: list[tuple[str | None, dict[str, Any] | str]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 250, "output_tokens": 1},
                    },
                },
            ),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
        ]
        events += [
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": w},
                },
            )
            for w in words
        ]
        events += [
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 19},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return StreamingResponse(_sse(events), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])])


def serve(app: Starlette) -> AbstractContextManager[str]:
    return serve_app(app, log_level="error", force_exit=True)
