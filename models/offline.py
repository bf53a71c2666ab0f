"""The offline provider: deterministic, derives every answer from what the agent was shown.

For demos and tests: it needs no network and no keys, and the same inputs always give
the same output, so runs are reproducible to the byte. It is labelled as such in every
event (`provider: offline`). `CONTROLROOM_OFFLINE_LATENCY_MS` simulates a model's
latency for benchmarks.

It serves `offline-deterministic-1`, and each faulty model its provider's `faults` name in
models.json (`models/config.py`): a model that fails the way a real one does, reaching the
engine as the real providers' failures do, so the engine's own handling (retries,
re-asking, STOP_HOOK, a flow's decision) is what runs. The fault is the model's, never a
count of calls, so a run killed and resumed takes the same path:

- `http_500`: every attempt is a server error (`ModelCallError` kind `server_error`, HTTP
  500), which the engine retries as the provider's `max_retries` and `backoff_s` say (an
  offline provider waits 0 s unless it sets `backoff_s`), each attempt recorded
  (`ModelAttemptFailed`); the step then fails as a transport failure.
- `cut`: the reply stops at the token limit (half its words at most, no more than the
  request's `max_tokens` allows), streamed as far as it got, then `ReplyCutError` (kind
  `unusable`, not retried), as OpenAI's `finish_reason: length` and Anthropic's
  `stop_reason: max_tokens` are.
- `prose`: "I think the scene works well." whatever was asked: a step with an output
  contract is asked again and ends in STOP_HOOK; a step without one keeps the prose.
- `contradict_canon`: the deterministic answer, except that a prompt type that writes or
  edits scene prose (`draft_scene`, `polish_draft`, `write_beat`, `edit_scene`) writes one
  canon detail (an eye or hair colour) with a value its card rules out, which the
  continuity check really finds. A writer shown no canon (`write_beat`) gives violet eyes.
- `verdict_fail`: the deterministic answer, except that a check or a critic fails what it
  reads: a continuity report `pass: false` with a conflict, a critic's verdict `revise`
  with a problem, a playbook continuity check or critique that fails, and any other
  contracted reply's `pass` false or `verdict` failing.

With `until_feedback: true` a faulty model answers as `offline-deterministic-1` does once
the request's user message carries `<review_feedback` (a reviewer's findings added to the
prompt on a rollback). A faulty reply costs what a deterministic one does (estimated
tokens), so rejected attempts can be charged.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from typing import Any

from controlroom.domain.errors import ModelConfigError, ModelError, ReplyCutError
from controlroom.domain.run_events import TokenUsage
from controlroom.models import offline_faults, offline_roles
from controlroom.models.config import OFFLINE_MODEL, OFFLINE_PROVIDER, OfflineFault
from controlroom.models.port import ModelRequest, ModelResponse, TextSink

LATENCY_VAR = "CONTROLROOM_OFFLINE_LATENCY_MS"

Handler = Callable[[str, list[tuple[str, str]]], str]


def approx_tokens(text: str) -> int:
    """About four tokens for every three words, as a stand-in for a tokenizer."""
    return (len(text.split()) * 4 + 2) // 3


class OfflineModel:
    provider = OFFLINE_PROVIDER

    def __init__(
        self,
        latency_ms: float = 0.0,
        faults: Mapping[str, OfflineFault] | None = None,
        provider: str = OFFLINE_PROVIDER,
    ) -> None:
        self.latency_ms = latency_ms
        #: The faulty models served beside the deterministic one, by name.
        self.faults = dict(faults or {})
        self.provider = provider

    @classmethod
    def from_env(
        cls, faults: Mapping[str, OfflineFault] | None = None, provider: str = OFFLINE_PROVIDER
    ) -> OfflineModel:
        raw = os.environ.get(LATENCY_VAR, "").strip()
        try:
            latency = float(raw) if raw else 0.0
        except ValueError:
            raise ModelConfigError(f"{LATENCY_VAR}='{raw}' is not a number") from None
        return cls(max(0.0, latency), faults, provider)

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """What this provider is given; it reads only the slots, deterministically."""
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages.append({"role": "user", "content": request.prompt})
        body: dict[str, Any] = {"model": request.model, "messages": messages, **request.params}
        if request.response_schema is not None:
            body["response_schema"] = dict(request.response_schema)
        return body

    def serves(self, model: str) -> bool:
        """The deterministic model, and each faulty one configured."""
        return model == OFFLINE_MODEL or model in self.faults

    def _fault_of(self, model: str) -> OfflineFault | None:
        if model == OFFLINE_MODEL:
            return None
        fault = self.faults.get(model)
        if fault is None:
            served = ", ".join(f"'{m}'" for m in [OFFLINE_MODEL, *self.faults])
            raise ModelConfigError(f"offline provider serves model {served}, not '{model}'")
        return fault

    async def complete(
        self, request: ModelRequest, on_text: TextSink | None = None
    ) -> ModelResponse:
        fault = offline_faults.active(self._fault_of(request.model), request)
        handler = offline_roles.HANDLERS.get(request.prompt_type)
        if handler is None:
            raise ModelError(
                f"offline model has no behaviour for prompt type '{request.prompt_type}'"
            )
        if self.latency_ms:
            await asyncio.sleep(self.latency_ms / 1000)
        if fault == "http_500":
            raise offline_faults.server_error(request)
        if fault is None:
            text = handler(request.task_description, _inputs(request))
        else:
            text = offline_faults.reply(fault, request, handler)
        if not text.strip():
            raise ModelError(f"offline model produced no output for '{request.prompt_type}'")
        if fault == "cut":
            limit = offline_faults.max_tokens(request.params)
            partial = offline_faults.cut(text, limit)
            _stream(partial, on_text)
            raise ReplyCutError(limit, "finish_reason=length", _usage(request, partial))
        _stream(text, on_text)
        return ModelResponse(text=text, usage=_usage(request, text))


def _inputs(request: ModelRequest) -> list[tuple[str, str]]:
    """The inputs a handler reads; a loop's handlers also read what the flow added to the
    prompt (its "## Also" part: a gate's findings, a collaborator's help, notes)."""
    from controlroom.models.offline_loops import READS_ALSO

    inputs = list(request.inputs.items())
    _, marker, also = request.prompt.partition("\n## Also\n")
    if marker and request.prompt_type in READS_ALSO:
        inputs.append(("also", also))
    return inputs


def _stream(text: str, on_text: TextSink | None) -> None:
    if on_text is not None:
        for paragraph in text.split("\n\n"):  # streamed a paragraph at a time
            on_text(paragraph + "\n\n")


def _usage(request: ModelRequest, text: str) -> TokenUsage:
    return TokenUsage(
        input_tokens=approx_tokens(f"{request.system}\n{request.prompt}"),
        output_tokens=approx_tokens(text),
        estimated=True,
    )
