"""Hand-written fakes for the engine's ports."""

from __future__ import annotations

from typing import Any

from controlroom.domain.errors import ModelError
from controlroom.eventstore.store import EventStore
from controlroom.models.offline import OfflineModel
from controlroom.models.port import ModelRequest, ModelResponse


class RecordingModel:
    """The offline model, with every request kept and a scripted failure at call N."""

    provider = "offline"

    def __init__(self, fail_on_call: int | None = None, failure: BaseException | None = None):
        self.inner = OfflineModel()
        self.requests: list[ModelRequest] = []
        self.fail_on_call = fail_on_call
        self.failure = failure or ModelError("scripted model failure")

    async def complete(self, request: ModelRequest, on_text: Any = None) -> ModelResponse:
        self.requests.append(request)
        if self.fail_on_call is not None and len(self.requests) == self.fail_on_call:
            raise self.failure
        return await self.inner.complete(request, on_text)


class CountingStore(EventStore):
    """Counts durable commits that carry events, to check the one-commit-per-step promise."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        super().__init__(env)
        self.event_commits = 0

    def save(self, *aggregates: Any, tracking: Any = None) -> Any:
        committed = super().save(*aggregates, tracking=tracking)
        if committed:
            self.event_commits += 1
        return committed
