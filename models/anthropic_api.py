"""Anthropic's Messages API. Needs the `anthropic` extra; the engine does the retrying.

The role goes in `system`, the task in the user message. A reply contract is sent as
`output_config.format` (JSON Schema structured output, the schema adapted the way the
official SDK adapts it), and dropped if the server refuses it. A provider with no
`api_key_env` sends no key at all: never one the SDK would pick up from the environment.
A reply is read only up to `max_reply_chars` (`models/bounded_http.py`).
"""

from __future__ import annotations

from typing import Any

from controlroom.domain import untrusted_json
from controlroom.domain.errors import ModelCallError, ReplyCutError
from controlroom.domain.run_events import TokenUsage
from controlroom.models.ambient import omitted
from controlroom.models.bounded_http import bounded_http_client, reply_too_large
from controlroom.models.config import ProviderConfig
from controlroom.models.keys import api_key
from controlroom.models.offline import approx_tokens
from controlroom.models.port import ModelRequest, ModelResponse, TextSink, well_formed
from controlroom.models.sdk_errors import import_sdk, parsed_stream, translated
from controlroom.models.structured import SchemaFallback

DEFAULT_MAX_TOKENS = 4096
DEFAULT_BASE_URL = "https://api.anthropic.com"
_OWN_KEYS = ("model", "max_tokens", "messages", "stream")


class AnthropicModel(SchemaFallback):
    schema_key = "output_config"

    def __init__(self, provider: str, config: ProviderConfig) -> None:
        self.provider = provider
        self._sdk = import_sdk(provider, "anthropic", "anthropic")
        self._key = api_key(provider, config)
        self._config = config
        self._base_url = config.base_url or DEFAULT_BASE_URL
        self._refuses_schema = config.structured_output == "never"

    def _client(self, max_reply_chars: int) -> Any:
        # One client per call, closed after it: its connections belong to one event loop,
        # and a run may be resumed on another. An explicit credential stops the SDK from
        # reading ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN or credential files: a key goes
        # only to the base URL the configuration pairs it with.
        return self._sdk.AsyncAnthropic(
            api_key=self._key or "unused",
            base_url=self._base_url,
            default_headers=omitted(self._sdk, "ANTHROPIC_CUSTOM_HEADERS"),
            # The idle timeout bounds each read (the first byte, then each chunk), so a
            # server streaming steadily is never cut off; the engine holds the deadline.
            timeout=self._sdk.Timeout(
                self._config.timeout_s, connect=self._config.connect_timeout_s
            ),
            max_retries=0,
            http_client=bounded_http_client(self._sdk, max_reply_chars),
        )

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.params)
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": int(params.pop("max_tokens", DEFAULT_MAX_TOKENS)),
            "messages": [{"role": "user", "content": request.prompt}],
            "stream": True,
        }
        if request.system:
            body["system"] = request.system
        body.update(params)  # passed through as given (temperature, top_k, ...)
        if request.response_schema is not None and not self._refuses_schema:
            body["output_config"] = {
                "format": {"type": "json_schema", "schema": _adapted(request.response_schema)}
            }
        return body

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        return await self.send_with_fallback(
            lambda: self.request_body(request),
            lambda body: self._send(body, request, on_text),
            self._config.structured_output,
        )

    async def _send(
        self, body: dict[str, Any], request: ModelRequest, on_text: TextSink | None
    ) -> ModelResponse:
        extra = {k: v for k, v in body.items() if k not in _OWN_KEYS}
        parts: list[str] = []
        limit = request.max_reply_chars
        with translated(self._sdk, self._key, self._base_url):
            async with self._client(limit) as client:
                raw = await client.messages.with_raw_response.create(
                    model=body["model"],
                    max_tokens=body["max_tokens"],
                    messages=body["messages"],
                    stream=True,
                    extra_body=extra,
                )
                if "text/event-stream" in raw.headers.get("content-type", ""):
                    measured, stop = await self._read(
                        await parsed_stream(raw), parts, on_text, limit
                    )
                else:  # a server that ignores `stream: true` and answers with one body
                    whole = untrusted_json.loads((await raw.http_response.aread()).decode())
                    measured, stop = _whole(whole, parts)
                    if sum(map(len, parts)) > limit:
                        raise reply_too_large(limit, "in one response body")
                    if parts and on_text is not None:
                        on_text(parts[0])
        text = well_formed("".join(parts))
        input_tokens, output_tokens = measured
        usage = TokenUsage(
            input_tokens=input_tokens or approx_tokens(f"{request.system}\n{request.prompt}"),
            output_tokens=output_tokens or approx_tokens(text),
            estimated=not (input_tokens and output_tokens),
        )
        if stop == "max_tokens":
            raise ReplyCutError(body["max_tokens"], "stop_reason=max_tokens", usage)
        if stop is None:
            raise ModelCallError(
                "incomplete",
                f"the stream ended before the reply finished (no stop reason, "
                f"{len(text)} characters received)",
            )
        if not text.strip():
            raise ModelCallError("unusable", "the reply was empty")
        return ModelResponse(text, usage)

    async def _read(
        self, stream: Any, parts: list[str], on_text: TextSink | None, limit: int
    ) -> tuple[tuple[int, int], str | None]:
        input_tokens = output_tokens = 0
        received = 0
        stop: str | None = None
        async for event in stream:
            if event.type == "message_start":
                input_tokens = _tokens(event.message.usage, "input_tokens") or input_tokens
            elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                received += len(event.delta.text)
                if received > limit:  # stop reading: the rest is never held
                    raise reply_too_large(limit, "streamed")
                parts.append(event.delta.text)
                if on_text is not None:
                    on_text(event.delta.text)
            elif event.type == "message_delta":
                stop = event.delta.stop_reason or stop
                # Proxies (LiteLLM) report the input tokens here, not in message_start.
                input_tokens = _tokens(event.usage, "input_tokens") or input_tokens
                output_tokens = _tokens(event.usage, "output_tokens") or output_tokens
        return (input_tokens, output_tokens), stop


def _tokens(usage: Any, name: str) -> int:
    value = getattr(usage, name, None) if usage is not None else None
    return value if isinstance(value, int) else 0


def _whole(data: Any, parts: list[str]) -> tuple[tuple[int, int], str | None]:
    if not isinstance(data, dict) or data.get("type") == "error":
        raise ModelCallError("stream_error", f"error body instead of a reply: {str(data)[:300]}")
    for block in data.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    usage = data.get("usage") or {}
    measured = (int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0))
    return measured, data.get("stop_reason")


def _adapted(schema: Any) -> dict[str, Any]:
    """The schema as the API accepts it (constraints it lacks moved into descriptions)."""
    try:
        from anthropic.lib._parse._transform import transform_schema
    except ImportError:  # an SDK without the helper: send the schema as it is
        return dict(schema)
    return dict(transform_schema(dict(schema)))
