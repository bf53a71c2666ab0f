"""OpenAI-compatible chat completions: OpenAI itself, vLLM, Ollama, llama.cpp servers.

Needs the `openai` extra. The SDK's own retries are off: the engine retries, and records
every attempt as an event.
"""

from __future__ import annotations

from typing import Any

from controlroom.domain.errors import ModelCallError
from controlroom.domain.run_events import TokenUsage
from controlroom.models.config import ProviderConfig
from controlroom.models.keys import api_key
from controlroom.models.offline import approx_tokens
from controlroom.models.port import ModelRequest, ModelResponse, TextSink
from controlroom.models.sdk_errors import import_sdk, translated


class OpenAICompatibleModel:
    def __init__(self, provider: str, config: ProviderConfig) -> None:
        self.provider = provider
        self._sdk = import_sdk(provider, "openai", "openai")
        self._key = api_key(provider, config)
        self._config = config

    def _client(self) -> Any:
        # One client per call, closed after it: an SDK client's connections belong to the
        # event loop that opened them, and a run may be resumed on another loop.
        return self._sdk.AsyncOpenAI(
            api_key=self._key or "unused",
            base_url=self._config.base_url,
            timeout=self._config.timeout_s,
            max_retries=0,
        )

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        with translated(self._sdk, self._key):
            async with self._client() as client:
                stream = await client.chat.completions.create(
                    model=request.model,
                    messages=[{"role": "user", "content": request.prompt}],
                    stream=True,
                    stream_options={"include_usage": True},
                    # Passed through as given: servers differ in what they accept.
                    extra_body=dict(request.params),
                )
                parts, finish, usage = await self._read(stream, on_text)
        text = "".join(parts)
        if finish == "length":
            raise ModelCallError(
                "unusable", "the reply was cut off at the token limit (finish_reason=length)"
            )
        if not text.strip():
            raise ModelCallError("unusable", "the reply was empty")
        return ModelResponse(
            text,
            TokenUsage(
                input_tokens=getattr(usage, "prompt_tokens", None) or approx_tokens(request.prompt),
                output_tokens=getattr(usage, "completion_tokens", None) or approx_tokens(text),
            ),
        )

    async def _read(
        self, stream: Any, on_text: TextSink | None
    ) -> tuple[list[str], str | None, Any]:
        parts: list[str] = []
        finish: str | None = None
        usage: Any = None
        async for chunk in stream:
            if getattr(chunk, "usage", None):
                usage = chunk.usage
            for choice in chunk.choices or []:
                text = choice.delta.content if choice.delta else None
                if text:
                    parts.append(text)
                    if on_text is not None:
                        on_text(text)
                if choice.finish_reason:
                    finish = choice.finish_reason
        return parts, finish, usage
