"""Anthropic's Messages API. Needs the `anthropic` extra; the engine does the retrying."""

from __future__ import annotations

from typing import Any

from controlroom.domain.errors import ModelCallError
from controlroom.domain.run_events import TokenUsage
from controlroom.models.config import ProviderConfig
from controlroom.models.keys import api_key
from controlroom.models.port import ModelRequest, ModelResponse, TextSink
from controlroom.models.sdk_errors import import_sdk, translated

DEFAULT_MAX_TOKENS = 4096


class AnthropicModel:
    def __init__(self, provider: str, config: ProviderConfig) -> None:
        self.provider = provider
        self._sdk = import_sdk(provider, "anthropic", "anthropic")
        self._key = api_key(provider, config)
        self._config = config

    def _client(self) -> Any:
        # One client per call, closed after it: its connections belong to one event loop,
        # and a run may be resumed on another.
        return self._sdk.AsyncAnthropic(
            api_key=self._key,
            base_url=self._config.base_url,
            timeout=self._config.timeout_s,
            max_retries=0,
        )

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        params: dict[str, Any] = dict(request.params)
        max_tokens = int(params.pop("max_tokens", DEFAULT_MAX_TOKENS))
        parts: list[str] = []
        with translated(self._sdk, self._key):
            async with self._client() as client:
                stream = await client.messages.create(
                    model=request.model,
                    max_tokens=max_tokens,
                    messages=[{"role": "user", "content": request.prompt}],
                    stream=True,
                    # Passed through as given (temperature, top_k, ...).
                    extra_body=params,
                )
                input_tokens, output_tokens, stop = await self._read(stream, parts, on_text)
        text = "".join(parts)
        if stop == "max_tokens":
            raise ModelCallError(
                "unusable", "the reply was cut off at the token limit (stop_reason=max_tokens)"
            )
        if not text.strip():
            raise ModelCallError("unusable", "the reply was empty")
        return ModelResponse(
            text, TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens)
        )

    async def _read(
        self, stream: Any, parts: list[str], on_text: TextSink | None
    ) -> tuple[int, int, str | None]:
        input_tokens = output_tokens = 0
        stop: str | None = None
        async for event in stream:
            if event.type == "message_start":
                input_tokens = event.message.usage.input_tokens or 0
            elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                parts.append(event.delta.text)
                if on_text is not None:
                    on_text(event.delta.text)
            elif event.type == "message_delta":
                stop = event.delta.stop_reason
                output_tokens = event.usage.output_tokens or output_tokens
        return input_tokens, output_tokens, stop
