"""Local servers that speak the OpenAI chat-completions and Anthropic messages APIs.

Each request takes the next behaviour from a script (the last one repeats); a script may
give some models their own list (`Script(["ok"], by_model={"bad-model": ["500"]})`), which
their requests take in their own order, so one server can play a failing model and a good
one side by side. Transport:
`429`, `500`, `hang`, `malformed`, `length`, `empty`, `cut` (the stream stops with no
finish reason), `midstream_error` (an error event after some text), `slow` (a steady
stream slower overall than the idle timeout), `whole` (ignores `stream: true`: one JSON
body), `no_usage`, `refuse_schema` (400 when structured output is asked for, then `ok`).
Content: `ok` (a JSON instance of the contract when the request carries one, in the
structured-output parameter or the system prompt; prose otherwise), `prose`, `fenced`,
`preamble`, `stringly` (booleans as "true"). Every request is kept for inspection.
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
CUT_TEXT = "The scene begins "
SLOW_GAP_S = 0.15


@dataclass
class Script:
    behaviours: list[str]
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: Each named model's own behaviours, taken in order by its requests alone (the last
    #: repeats); a request for any other model takes the next of `behaviours`.
    by_model: dict[str, list[str]] = field(default_factory=dict)
    #: Requests served so far from each list: the default one (None) and each model's.
    served: dict[str | None, int] = field(default_factory=dict, init=False, repr=False)

    def next(self, model: str | None = None) -> str:
        key = model if model is not None and model in self.by_model else None
        behaviours = self.behaviours if key is None else self.by_model[key]
        index = self.served.get(key, 0)
        self.served[key] = index + 1
        return behaviours[min(index, len(behaviours) - 1)]


def _sse(
    events: list[tuple[str | None, dict[str, Any] | str]], gap_s: float = 0.0
) -> AsyncIterator[bytes]:
    async def body() -> AsyncIterator[bytes]:
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            yield ((f"event: {name}\n" if name else "") + f"data: {text}\n\n").encode()
            await asyncio.sleep(gap_s)

    return body()


def _failure(behaviour: str, request: Request, body: dict[str, Any]) -> Response | None:
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
    if behaviour == "refuse_schema" and ("response_format" in body or "output_config" in body):
        return JSONResponse(
            {"error": {"message": "unsupported parameter", "type": "invalid_request_error"}},
            status_code=400,
        )
    return None


# -- content ------------------------------------------------------------------------------------


def contract_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The reply contract the request carries: as structured output, or in the system text."""
    if "response_format" in body:
        schema: dict[str, Any] = body["response_format"]["json_schema"]["schema"]
        return schema
    if "output_config" in body:
        schema = body["output_config"]["format"]["schema"]
        return schema
    system = body.get("system") or next(
        (m["content"] for m in body.get("messages", []) if m["role"] == "system"), ""
    )
    marker = system.find("## Output contract")
    if marker < 0:
        return None
    start = system.index("{", marker)
    value, _ = json.JSONDecoder().raw_decode(system, start)
    return value if isinstance(value, dict) else None


def instance(schema: dict[str, Any]) -> Any:
    """A small valid instance of a schema (what a well-behaved model answers)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: instance(props[name]) for name in schema.get("required", props)}
    if kind == "array":
        return []
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return max(1, int(schema.get("minimum", 1)))
    return "ok"


def reply_text(behaviour: str, body: dict[str, Any]) -> str:
    schema = contract_schema(body)
    if behaviour == "prose" or schema is None:
        return REPLY
    value = instance(schema)
    text = json.dumps(value)
    if behaviour == "fenced":
        return f"```json\n{json.dumps(value, indent=2)}\n```"
    if behaviour == "preamble":
        return f"Here is the report you asked for:\n\n{text}\n\nLet me know if you need more."
    if behaviour == "stringly":
        return text.replace("true", '"true"')
    return text


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]]


# -- OpenAI ------------------------------------------------------------------------------------


def openai_app(script: Script) -> Starlette:
    async def completions(request: Request) -> Response:
        body = await request.json()
        script.requests.append({"headers": dict(request.headers), "body": body})
        behaviour = script.next(body.get("model"))
        if behaviour == "hang":
            await asyncio.sleep(3600)
        failure = _failure(behaviour, request, body)
        if failure is not None:
            return failure
        model = body["model"]
        if behaviour == "malformed":
            return StreamingResponse(_sse([(None, "{not json")]), media_type="text/event-stream")
        text = "" if behaviour == "empty" else reply_text(behaviour, body)
        usage = {"prompt_tokens": 321, "completion_tokens": 17, "total_tokens": 338}
        finish = "length" if behaviour == "length" else "stop"
        if behaviour == "whole":
            return JSONResponse(
                {
                    "id": "c1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": finish,
                        }
                    ],
                    "usage": usage,
                }
            )

        def chunk(delta: dict[str, Any], reason: str | None) -> dict[str, Any]:
            return {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
            }

        if behaviour == "cut":
            text = CUT_TEXT
        events: list[tuple[str | None, dict[str, Any] | str]] = [
            (None, chunk({"role": "assistant", "content": w}, None)) for w in _words(text) if w
        ]
        if behaviour == "midstream_error":
            events.append((None, {"error": {"message": "upstream overloaded", "code": 529}}))
        elif behaviour != "cut":
            events.append((None, chunk({}, finish)))
            if behaviour != "no_usage":
                events.append(
                    (
                        None,
                        {
                            "id": "c1",
                            "object": "chat.completion.chunk",
                            "created": 0,
                            "model": model,
                            "choices": [],
                            "usage": usage,
                        },
                    )
                )
            events.append((None, "[DONE]"))
        gap = SLOW_GAP_S if behaviour == "slow" else 0.0
        return StreamingResponse(_sse(events, gap), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


# -- Anthropic ---------------------------------------------------------------------------------


def anthropic_app(script: Script, input_tokens_at_start: int = 250) -> Starlette:
    """`input_tokens_at_start=0` is a proxy (LiteLLM) that reports them in message_delta."""

    async def messages(request: Request) -> Response:
        body = await request.json()
        script.requests.append({"headers": dict(request.headers), "body": body})
        behaviour = script.next(body.get("model"))
        if behaviour == "hang":
            await asyncio.sleep(3600)
        failure = _failure(behaviour, request, body)
        if failure is not None:
            return failure
        if behaviour == "malformed":
            return StreamingResponse(
                _sse([("message_start", "{not json")]), media_type="text/event-stream"
            )
        model = body["model"]
        text = "" if behaviour == "empty" else reply_text(behaviour, body)
        stop = "max_tokens" if behaviour == "length" else "end_turn"
        if behaviour == "whole":
            return JSONResponse(
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 250, "output_tokens": 19},
                }
            )
        if behaviour == "cut":
            text = CUT_TEXT
        no_usage = behaviour == "no_usage"
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
                        "usage": {
                            "input_tokens": 0 if no_usage else input_tokens_at_start,
                            "output_tokens": 0 if no_usage else 1,
                        },
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
            for w in _words(text)
            if w
        ]
        if behaviour == "midstream_error":
            events.append(
                (
                    "error",
                    {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
                )
            )
        elif behaviour != "cut":
            usage: dict[str, int] = {"output_tokens": 0 if no_usage else 19}
            if not no_usage and input_tokens_at_start == 0:
                usage["input_tokens"] = 250
            events += [
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": usage,
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
        gap = SLOW_GAP_S if behaviour == "slow" else 0.0
        return StreamingResponse(_sse(events, gap), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])])


def serve(app: Starlette) -> AbstractContextManager[str]:
    return serve_app(app, log_level="error", force_exit=True)
