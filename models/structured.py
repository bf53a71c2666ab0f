"""Structured output with a fallback, the same for every provider.

A provider sends the output contract as its API's structured-output parameter. A server that
refuses that parameter (a 4xx naming the request as unacceptable) is asked once more without
it and, with `structured_output: auto`, never sent it again; the contract stays in the prompt,
and the engine validates the reply either way. The refused request is handed back with the
answer (`ModelResponse.refused`, or `FailedAfterRefusal` when the second request failed too)
so the engine records it as the failed attempt it was.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from controlroom.domain.errors import ModelCallError
from controlroom.models.port import FailedAfterRefusal, ModelResponse, Refusal

#: Statuses with which servers say "I do not take that parameter".
REFUSED_STATUSES = (400, 404, 415, 422, 501)


class SchemaFallback:
    """Mixed into a provider: `schema_key` names its structured-output parameter."""

    schema_key: str
    _refuses_schema: bool

    async def send_with_fallback(
        self,
        build: Callable[[], dict[str, Any]],
        send: Callable[[dict[str, Any]], Awaitable[ModelResponse]],
        mode: str,
    ) -> ModelResponse:
        body = build()
        try:
            return await send(body)
        except ModelCallError as exc:
            refused = exc.kind == "rejected" and exc.status in REFUSED_STATUSES
            if not (mode == "auto" and refused and self.schema_key in body):
                raise
            refusal = Refusal(body, exc)
        self._refuses_schema = True
        body = build()
        try:
            response = await send(body)
        except ModelCallError as exc:
            raise FailedAfterRefusal(exc, refusal) from exc
        return replace(response, sent=body, refused=refusal)
