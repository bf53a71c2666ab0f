"""The offline provider: deterministic, derives every answer from what the agent was shown.

For demos and tests: it needs no network and no keys, and the same inputs always give
the same output, so runs are reproducible to the byte. It is labelled as such in every
event (`provider: offline`). `CONTROLROOM_OFFLINE_LATENCY_MS` simulates a model's
latency for benchmarks.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from controlroom.domain.errors import ModelConfigError, ModelError
from controlroom.domain.run_events import TokenUsage
from controlroom.models import offline_roles
from controlroom.models.config import OFFLINE_MODEL
from controlroom.models.port import ModelRequest, ModelResponse, TextSink

LATENCY_VAR = "CONTROLROOM_OFFLINE_LATENCY_MS"

Handler = Callable[[str, list[tuple[str, str]]], str]


def approx_tokens(text: str) -> int:
    """About four tokens for every three words, as a stand-in for a tokenizer."""
    return (len(text.split()) * 4 + 2) // 3


class OfflineModel:
    provider = "offline"

    def __init__(self, latency_ms: float = 0.0) -> None:
        self.latency_ms = latency_ms

    @classmethod
    def from_env(cls) -> OfflineModel:
        raw = os.environ.get(LATENCY_VAR, "").strip()
        try:
            latency = float(raw) if raw else 0.0
        except ValueError:
            raise ModelConfigError(f"{LATENCY_VAR}='{raw}' is not a number") from None
        return cls(max(0.0, latency))

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """What this provider is given; it reads only the slots, deterministically."""
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages.append({"role": "user", "content": request.prompt})
        body: dict[str, Any] = {"model": request.model, "messages": messages, **request.params}
        if request.response_schema is not None:
            body["response_schema"] = dict(request.response_schema)
        return body

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        if request.model != OFFLINE_MODEL:
            raise ModelConfigError(
                f"offline provider serves model '{OFFLINE_MODEL}', not '{request.model}'"
            )
        handler = offline_roles.HANDLERS.get(request.prompt_type)
        if handler is None:
            raise ModelError(
                f"offline model has no behaviour for prompt type '{request.prompt_type}'"
            )
        if self.latency_ms:
            await asyncio.sleep(self.latency_ms / 1000)
        text = handler(request.task_description, list(request.inputs.items()))
        if not text.strip():
            raise ModelError(f"offline model produced no output for '{request.prompt_type}'")
        if on_text is not None:
            for paragraph in text.split("\n\n"):  # streamed a paragraph at a time
                on_text(paragraph + "\n\n")
        usage = TokenUsage(
            input_tokens=approx_tokens(f"{request.system}\n{request.prompt}"),
            output_tokens=approx_tokens(text),
            estimated=True,
        )
        return ModelResponse(text=text, usage=usage)
