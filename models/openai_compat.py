"""OpenAI-compatible chat completions: OpenAI itself, vLLM, Ollama, llama.cpp, LiteLLM.

Needs the `openai` extra. The SDK's own retries are off: the engine retries, and records
every attempt as an event. The system prompt (the role) and the user message (the task)
are separate messages; a reply contract is sent as `response_format` (JSON Schema
structured output), and if the server refuses that parameter the request is sent again
without it: the contract is in the system prompt too, and the engine validates the reply.
A reply is read only up to `max_reply_chars` (`models/bounded_http.py`). The key, the
organization and the project sent are the ones this provider's configuration names, never
those the SDK would find in the environment (OPENAI_API_KEY, OPENAI_ORG_ID,
OPENAI_PROJECT_ID), which belong to OpenAI and not to whatever server `base_url` names.
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

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_OWN_KEYS = ("model", "messages", "stream")


class OpenAICompatibleModel(SchemaFallback):
    schema_key = "response_format"

    def __init__(self, provider: str, config: ProviderConfig) -> None:
        self.provider = provider
        self._sdk = import_sdk(provider, "openai", "openai")
        self._key = api_key(provider, config)
        self._config = config
        self._base_url = config.base_url or DEFAULT_BASE_URL
        #: Set when this server refused `response_format` once: not sent again.
        self._refuses_schema = config.structured_output == "never"

    def _client(self, max_reply_chars: int) -> Any:
        # One client per call, closed after it: an SDK client's connections belong to the
        # event loop that opened them, and a run may be resumed on another loop.
        organization, project = self._config.organization, self._config.project
        # Given None, the SDK reads OPENAI_ORG_ID / OPENAI_PROJECT_ID and sends them as
        # headers, to whatever base_url this is: a header not configured here is omitted.
        headers = {"OpenAI-Organization": organization, "OpenAI-Project": project}
        unset = {header: self._sdk.Omit() for header, value in headers.items() if value is None}
        unset |= omitted(self._sdk, "OPENAI_CUSTOM_HEADERS")
        return self._sdk.AsyncOpenAI(
            # Never an ambient OPENAI_API_KEY: only the key the configuration names.
            api_key=self._key or "unused",
            organization=organization,
            project=project,
            default_headers=unset,
            base_url=self._base_url,
            # The idle timeout bounds each read (the first byte, then each chunk), so a
            # server streaming steadily is never cut off; the engine holds the deadline.
            timeout=self._sdk.Timeout(
                self._config.timeout_s, connect=self._config.connect_timeout_s
            ),
            max_retries=0,
            http_client=bounded_http_client(self._sdk, max_reply_chars),
        )

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages.append({"role": "user", "content": request.prompt})
        body: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            # Passed through as given: servers differ in what they accept.
            **request.params,
        }
        if request.response_schema is not None and not self._refuses_schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.contract_name or request.prompt_type,
                    "schema": dict(request.response_schema),
                },
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
        limit = request.max_reply_chars
        with translated(self._sdk, self._key, self._base_url):
            async with self._client(limit) as client:
                raw = await client.chat.completions.with_raw_response.create(
                    model=body["model"], messages=body["messages"], stream=True, extra_body=extra
                )
                if "text/event-stream" in raw.headers.get("content-type", ""):
                    parts, finish, usage = await self._read(
                        await parsed_stream(raw), on_text, limit
                    )
                else:  # a server that ignores `stream: true` and answers with one body
                    whole = untrusted_json.loads((await raw.http_response.aread()).decode())
                    parts, finish, usage = _whole(whole)
                    if sum(map(len, parts)) > limit:
                        raise reply_too_large(limit, "in one response body")
                    if parts and on_text is not None:
                        on_text(parts[0])
        text = well_formed("".join(parts))
        if finish == "length":
            raise ReplyCutError(
                _max_tokens(body), "finish_reason=length", _usage(usage, request, text)
            )
        if finish is None:
            raise ModelCallError(
                "incomplete",
                f"the stream ended before the reply finished (no finish reason, "
                f"{len(text)} characters received)",
            )
        if not text.strip():
            raise ModelCallError("unusable", "the reply was empty")
        return ModelResponse(text, _usage(usage, request, text))

    async def _read(
        self, stream: Any, on_text: TextSink | None, limit: int
    ) -> tuple[list[str], str | None, Any]:
        parts: list[str] = []
        received = 0
        finish: str | None = None
        usage: Any = None
        async for chunk in stream:
            if getattr(chunk, "usage", None):
                usage = chunk.usage
            for choice in chunk.choices or []:
                text = choice.delta.content if choice.delta else None
                if text:
                    received += len(text)
                    if received > limit:  # stop reading: the rest is never held
                        raise reply_too_large(limit, "streamed")
                    parts.append(text)
                    if on_text is not None:
                        on_text(text)
                if choice.finish_reason:
                    finish = choice.finish_reason
        return parts, finish, usage


def _whole(data: Any) -> tuple[list[str], str | None, Any]:
    if not isinstance(data, dict) or "error" in data:
        raise ModelCallError("stream_error", f"error body instead of a reply: {str(data)[:300]}")
    choices = data.get("choices") or [{}]
    message = choices[0].get("message") or {}
    usage = data.get("usage") or {}

    class _Usage:
        prompt_tokens = usage.get("prompt_tokens")
        completion_tokens = usage.get("completion_tokens")

    content = message.get("content") or ""
    return [content] if content else [], choices[0].get("finish_reason"), _Usage()


def _max_tokens(body: dict[str, Any]) -> int | None:
    """The token limit the request set (OpenAI's newer name first), if any."""
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _usage(usage: Any, request: ModelRequest, text: str) -> TokenUsage:
    measured_in = getattr(usage, "prompt_tokens", None)
    measured_out = getattr(usage, "completion_tokens", None)
    return TokenUsage(
        input_tokens=measured_in or approx_tokens(f"{request.system}\n{request.prompt}"),
        output_tokens=measured_out or approx_tokens(text),
        estimated=not (measured_in and measured_out),
    )
